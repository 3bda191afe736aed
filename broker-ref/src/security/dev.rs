//! `odradek-broker --dev-security DIR`: a throw-away PKI (a CA, a broker certificate for
//! 127.0.0.1 / localhost, a client certificate `CN=dev-client,OU=dev,O=odradek`, made with
//! rcgen), a SCRAM / PLAIN user `dev` with a random password, the listener settings for
//! PLAINTEXT, SSL (client certificates requested) and SASL_SSL (PLAIN, SCRAM-SHA-256/512,
//! unsecured OAUTHBEARER), and librdkafka client settings for each. DIR is reused as it is
//! when it already holds the files.

use std::path::{Path, PathBuf};

use base64::Engine;

use super::scram::random_bytes;
use super::secret::Secret;
use crate::{Error, Result};

/// What `--dev-security` made.
#[derive(Debug)]
pub struct DevSecurity {
    /// The directory.
    pub dir: PathBuf,
    /// The user's name.
    pub user: String,
    /// The user's password.
    pub password: Secret<String>,
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text)?;
    #[cfg(unix)]
    if path.extension().is_some_and(|e| e == "key") || path.ends_with("dev-password.txt") {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

fn rc<T>(r: std::result::Result<T, rcgen::Error>) -> Result<T> {
    r.map_err(|e| {
        Error::config(
            "--dev-security",
            format!("certificate generation failed: {e}"),
        )
    })
}

/// Makes (or reuses) the files in `dir`.
pub fn generate(dir: &Path) -> Result<DevSecurity> {
    std::fs::create_dir_all(dir)?;
    let dir = std::fs::canonicalize(dir)?;
    let pw_path = dir.join("dev-password.txt");
    if !(dir.join("ca.pem").exists()
        && dir.join("broker-keystore.pem").exists()
        && pw_path.exists())
    {
        let ca_key = rc(rcgen::KeyPair::generate())?;
        let mut ca = rc(rcgen::CertificateParams::new(Vec::<String>::new()))?;
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "odradek dev CA");
        ca.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca_cert = rc(ca.self_signed(&ca_key))?;
        let issuer = rcgen::Issuer::new(ca, ca_key);

        let broker_key = rc(rcgen::KeyPair::generate())?;
        let mut broker = rc(rcgen::CertificateParams::new(vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
        ]))?;
        broker
            .distinguished_name
            .push(rcgen::DnType::CommonName, "odradek-broker");
        broker.extended_key_usages = vec![
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let broker_cert = rc(broker.signed_by(&broker_key, &issuer))?;

        let client_key = rc(rcgen::KeyPair::generate())?;
        let mut client = rc(rcgen::CertificateParams::new(Vec::<String>::new()))?;
        client
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "odradek");
        client
            .distinguished_name
            .push(rcgen::DnType::OrganizationalUnitName, "dev");
        client
            .distinguished_name
            .push(rcgen::DnType::CommonName, "dev-client");
        client.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let client_cert = rc(client.signed_by(&client_key, &issuer))?;

        write(&dir.join("ca.pem"), &ca_cert.pem())?;
        write(&dir.join("broker.pem"), &broker_cert.pem())?;
        write(&dir.join("broker.key"), &broker_key.serialize_pem())?;
        write(
            &dir.join("broker-keystore.pem"),
            &format!(
                "{}{}{}",
                broker_key.serialize_pem(),
                broker_cert.pem(),
                ca_cert.pem()
            ),
        )?;
        write(&dir.join("client.pem"), &client_cert.pem())?;
        write(&dir.join("client.key"), &client_key.serialize_pem())?;
        let pw = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random_bytes(18));
        write(&pw_path, &format!("{pw}\n"))?;
    }
    let password = std::fs::read_to_string(&pw_path)?.trim().to_string();
    Ok(DevSecurity {
        dir,
        user: "dev".to_string(),
        password: Secret::new(password),
    })
}

impl DevSecurity {
    /// The broker settings (before the user's own `--override`s, which win).
    pub fn broker_overrides(&self) -> Vec<(String, String)> {
        let d = self.dir.display();
        let pw = self.password.expose();
        let user = &self.user;
        let mut out: Vec<(String, String)> = vec![
            ("listeners".into(), "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,SASL_SSL://127.0.0.1:9094".into()),
            ("ssl.keystore.type".into(), "PEM".into()),
            ("ssl.keystore.location".into(), format!("{d}/broker-keystore.pem")),
            ("ssl.truststore.type".into(), "PEM".into()),
            ("ssl.truststore.location".into(), format!("{d}/ca.pem")),
            ("listener.name.ssl.ssl.client.auth".into(), "requested".into()),
            ("listener.name.sasl_ssl.sasl.enabled.mechanisms".into(), "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER".into()),
            (
                "listener.name.sasl_ssl.plain.sasl.jaas.config".into(),
                format!("org.apache.kafka.common.security.plain.PlainLoginModule required user_{user}=\"{pw}\";"),
            ),
        ];
        for m in ["scram-sha-256", "scram-sha-512"] {
            out.push((
                format!("listener.name.sasl_ssl.{m}.sasl.jaas.config"),
                "org.apache.kafka.common.security.scram.ScramLoginModule required;".into(),
            ));
        }
        out.push((
            "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config".into(),
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;".into(),
        ));
        out
    }

    /// librdkafka client settings for each secured listener, given the bound addresses.
    pub fn client_settings(&self, ssl: Option<&str>, sasl_ssl: Option<&str>) -> String {
        let d = self.dir.display();
        let mut out = String::new();
        if let Some(addr) = ssl {
            out.push_str(&format!(
                "# SSL with a client certificate (principal User:CN=dev-client,OU=dev,O=odradek)\n\
                 bootstrap.servers={addr}\nsecurity.protocol=SSL\nssl.ca.location={d}/ca.pem\n\
                 ssl.certificate.location={d}/client.pem\nssl.key.location={d}/client.key\n\n"
            ));
        }
        if let Some(addr) = sasl_ssl {
            out.push_str(&format!(
                "# SASL_SSL with SCRAM-SHA-512 (PLAIN and SCRAM-SHA-256 take the same user; OAUTHBEARER\n\
                 # takes an unsecured JWT: sasl.oauthbearer.config=principal={user})\n\
                 bootstrap.servers={addr}\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n\
                 sasl.username={user}\nsasl.password={pw}\nssl.ca.location={d}/ca.pem\n",
                user = self.user,
                pw = self.password.expose()
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_once_and_the_broker_accepts_it() {
        let dir = tempfile::tempdir().unwrap();
        let dev = generate(dir.path()).unwrap();
        let ca = std::fs::read_to_string(dir.path().join("ca.pem")).unwrap();
        let again = generate(dir.path()).unwrap();
        assert_eq!(again.password, dev.password);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("ca.pem")).unwrap(),
            ca
        );
        assert!(!format!("{dev:?}").contains(dev.password.expose().as_str()));
        let config = crate::config::BrokerConfig::from_entries(dev.broker_overrides()).unwrap();
        let creds = std::sync::Arc::new(super::super::CredentialStore::in_memory());
        let listeners = super::super::listener_security(&config, &creds).unwrap();
        assert_eq!(listeners.len(), 3);
        assert!(listeners[1].tls.is_some() && listeners[2].sasl.is_some());
        let text = dev.client_settings(Some("127.0.0.1:9093"), Some("127.0.0.1:9094"));
        assert!(text.contains("security.protocol=SASL_SSL") && text.contains("ssl.key.location"));
    }
}
