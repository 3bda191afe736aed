//! The broker's SASL server message parsers on arbitrary bytes: PLAIN, SCRAM client-first and
//! client-final (also a whole exchange against a fixed credential), the OAUTHBEARER client
//! initial response and the unsecured JWT validator, and the JAAS parser. None may panic, loop
//! or allocate from an unchecked length.
#![no_main]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use odradek_broker::security::oauth::{parse_initial_response, UnsecuredValidator};
use odradek_broker::security::scram::{
    parse_client_final, parse_client_first, ScramCredential, ScramMechanism, ScramServer,
};
use odradek_broker::security::{jaas, plain, Secret};

fn credential() -> &'static ScramCredential {
    static C: OnceLock<ScramCredential> = OnceLock::new();
    C.get_or_init(|| ScramCredential::from_password(ScramMechanism::Sha256, "pw", 4096))
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    match selector % 6 {
        0 => {
            let users: BTreeMap<String, Secret<String>> =
                [("alice".to_string(), Secret::from("alice-secret"))].into();
            let _ = plain::authenticate(rest, &users);
        }
        1 => {
            let _ = parse_client_first(rest);
            let _ = parse_client_final(rest);
        }
        2 => {
            // A whole exchange: the input is split into a client-first and a client-final.
            let cut = rest.iter().position(|b| *b == 0).unwrap_or(rest.len());
            let mut server = ScramServer::new(ScramMechanism::Sha256);
            if server.step(&rest[..cut], |_| Some(credential().clone())).is_ok() {
                let _ = server.step(rest.get(cut + 1..).unwrap_or(&[]), |_| None);
            }
        }
        3 => {
            if let Ok(r) = parse_initial_response(rest) {
                let _ = UnsecuredValidator::default().validate(r.token.expose(), 1_700_000_000_000);
            }
        }
        4 => {
            if let Ok(text) = std::str::from_utf8(rest) {
                let _ = UnsecuredValidator::default().validate(text, 1_700_000_000_000);
            }
        }
        _ => {
            if let Ok(text) = std::str::from_utf8(rest) {
                let _ = jaas::parse(text);
            }
        }
    }
});
