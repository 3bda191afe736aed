#!/usr/bin/env bash
# Makes a throw-away PKI for the security tests, at test time, with the openssl CLI:
#
#   tests/security/certs.sh OUTDIR [HOST]      HOST defaults to 127.0.0.1
#
# OUTDIR/
#   ca.pem ca.key                     the test CA (trusted by everyone below)
#   broker.pem broker.key             broker certificate (SAN IP:HOST, IP:127.0.0.1, DNS:localhost)
#                                     and its unencrypted PKCS#8 key
#   broker-keystore.pem               key + certificate chain in one file (Kafka's PEM keystore)
#   broker-wronghost.pem .key         a broker certificate for DNS:wrong.invalid only (hostname
#                                     mismatch tests)
#   client.pem client.key             client certificate (subject CN=client,OU=tests,O=odradek)
#   client-encrypted.key              the same key as encrypted PKCS#8 (AES-256-CBC)
#   client-key-password.txt           its password
#   client-keystore.pem               client key + certificate chain in one file
#   expired.pem expired.key           a client certificate that expired in 2020
#   other-ca.pem                      an unrelated CA
#   untrusted.pem untrusted.key       a client certificate signed by other-ca (not trusted)
#   untrusted-broker.pem .key         a broker certificate signed by other-ca
#
# Every key is EC P-256 except the client key (RSA 2048, as most deployments still use).
# Idempotent: an OUTDIR that already holds ca.pem is left as it is.
set -euo pipefail
OUT="${1:?usage: tests/security/certs.sh OUTDIR [HOST]}"
HOST="${2:-127.0.0.1}"
mkdir -p "$OUT"
cd "$OUT"
[[ -f ca.pem && -f untrusted-broker.pem ]] && exit 0
command -v openssl >/dev/null || { echo "certs.sh: openssl is required" >&2; exit 1; }
exec 3>&2 2>"$OUT/openssl.log"

ec_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }

# ca NAME SUBJECT
make_ca() {
  ec_key "$1.key"
  openssl req -x509 -new -key "$1.key" -sha256 -days 3650 -subj "$2" -out "$1.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
}

# leaf NAME SUBJECT CA EXTFILE-CONTENTS [rsa]
make_leaf() {
  local name="$1" subject="$2" ca="$3" ext="$4" kind="${5:-ec}"
  if [[ "$kind" == rsa ]]; then
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$name.key"
  else
    ec_key "$name.key"
  fi
  openssl req -new -key "$name.key" -subj "$subject" -out "$name.csr"
  printf '%s\n' "$ext" >"$name.ext"
  openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca.key" -CAcreateserial \
    -days 825 -sha256 -extfile "$name.ext" -out "$name.pem"
  rm -f "$name.csr" "$name.ext"
}

SERVER_EXT="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:$HOST,IP:127.0.0.1,DNS:localhost"
CLIENT_EXT="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"

make_ca ca "/CN=odradek test CA"
make_ca other-ca "/CN=some other CA"
make_leaf broker "/CN=broker/OU=tests/O=odradek" ca "$SERVER_EXT"
make_leaf broker-wronghost "/CN=wrong.invalid" ca "basicConstraints=CA:FALSE
extendedKeyUsage=serverAuth
subjectAltName=DNS:wrong.invalid"
make_leaf untrusted-broker "/CN=broker" other-ca "$SERVER_EXT"
make_leaf client "/CN=client/OU=tests/O=odradek" ca "$CLIENT_EXT" rsa
make_leaf untrusted "/CN=client/OU=tests/O=odradek" other-ca "$CLIENT_EXT"

# An expired client certificate: `openssl ca` takes explicit validity dates.
mkdir -p expired-ca/newcerts
: >expired-ca/index.txt
echo 1000 >expired-ca/serial
cat >expired-ca/ca.cnf <<EOF
[ca]
default_ca = test
[test]
dir = $OUT/expired-ca
database = \$dir/index.txt
new_certs_dir = \$dir/newcerts
serial = \$dir/serial
default_md = sha256
policy = any
copy_extensions = none
[any]
commonName = supplied
[ext]
basicConstraints = CA:FALSE
extendedKeyUsage = clientAuth
EOF
ec_key expired.key
openssl req -new -key expired.key -subj "/CN=expired" -out expired.csr
openssl ca -batch -config expired-ca/ca.cnf -cert ca.pem -keyfile ca.key -extensions ext \
  -startdate 20200101000000Z -enddate 20200201000000Z -in expired.csr -out expired.pem -notext
rm -rf expired.csr expired-ca

# Encrypted PKCS#8 client key and the one-file keystores.
printf 'client-secret-%s\n' "$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')" >client-key-password.txt
openssl pkcs8 -topk8 -in client.key -v2 aes-256-cbc -passout "file:client-key-password.txt" \
  -out client-encrypted.key
cat broker.key broker.pem ca.pem >broker-keystore.pem
cat client.key client.pem ca.pem >client-keystore.pem
rm -f ./*.srl
exec 2>&3
echo "certs.sh: test PKI in $OUT" >&2
