//! OAUTHBEARER tokens from the application (librdkafka's `oauthbearer_token_refresh_cb` +
//! `rd_kafka_oauthbearer_set_token`, as one synchronous callback): the library calls the
//! callback whenever a connection authenticates and the cached token is due (at 80% of its
//! lifetime); the callback answers with [`odk_oauthbearer_token_set`] (or
//! [`odk_oauthbearer_token_set_failure`]) before it returns.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

use odk_core::security::{OAuthToken, Secret, TokenFuture, TokenProvider};
use odradek_bindings::ClientError;

use crate::error::odk_err_t;
use crate::ffi::{guard_err, slice_arg, str_arg, Opaque};

/// The token a callback fills in. Only valid during the callback.
#[derive(Debug, Default)]
pub struct odk_oauthbearer_token_t {
    token: Option<OAuthToken>,
    failure: Option<String>,
}

/// The token callback: fill `token` with `odk_oauthbearer_token_set` (or report why not with
/// `odk_oauthbearer_token_set_failure`) and return `ODK_ERR_NO_ERROR`. `oauthbearer_config` is
/// the value of `sasl.oauthbearer.config` ("" when unset), `opaque` the configuration's opaque.
/// Called on a library thread, never concurrently for one client; it may block.
pub type odk_oauthbearer_token_cb_t = Option<
    unsafe extern "C" fn(
        token: *mut odk_oauthbearer_token_t,
        oauthbearer_config: *const c_char,
        opaque: *mut c_void,
    ) -> odk_err_t,
>;

/// Sets the token: its value, when it expires (ms since the Unix epoch), the principal it
/// names, and `extension_cnt / 2` SASL extensions as `key, value` string pairs. Returns
/// `ODK_ERR__INVALID_ARG` (with `errstr`) for a NULL or empty value, an expiry in the past, an
/// odd extension count or an extension name RFC 7628 forbids.
///
/// Thread safety: only on `token`, from inside the callback that received it.
///
/// # Safety
/// `token` is the callback's; `value` and `principal` NUL-terminated (principal may be NULL);
/// `extensions` NULL or `extension_cnt` NUL-terminated strings; `errstr` NULL or
/// `errstr_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn odk_oauthbearer_token_set(
    token: *mut odk_oauthbearer_token_t,
    value: *const c_char,
    expires_at_ms: i64,
    principal: *const c_char,
    extensions: *const *const c_char,
    extension_cnt: usize,
    errstr: *mut c_char,
    errstr_size: usize,
) -> odk_err_t {
    guard_err(errstr, errstr_size, || {
        // SAFETY: per the contract.
        let token = unsafe { token.as_mut() }
            .ok_or_else(|| ClientError::invalid_arg("token must not be NULL"))?;
        // SAFETY: per the contract.
        let value = unsafe { str_arg(value, "value") }?;
        if value.is_empty() {
            return Err(ClientError::invalid_arg(
                "the token value must not be empty",
            ));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        if expires_at_ms <= now {
            return Err(ClientError::invalid_arg(
                "the token's expiry is in the past",
            ));
        }
        let principal = if principal.is_null() {
            String::new()
        } else {
            // SAFETY: per the contract.
            unsafe { str_arg(principal, "principal") }?.to_string()
        };
        if extension_cnt % 2 != 0 {
            return Err(ClientError::invalid_arg(
                "extensions come in key, value pairs: extension_cnt must be even",
            ));
        }
        // SAFETY: per the contract.
        let items = unsafe { slice_arg(extensions, extension_cnt, "extensions") }?;
        let mut pairs = Vec::new();
        for kv in items.chunks(2) {
            // SAFETY: per the contract, every item is a NUL-terminated string.
            let k = unsafe { str_arg(kv[0], "extension key") }?;
            // SAFETY: as above.
            let v = unsafe { str_arg(kv[1], "extension value") }?;
            odk_core::security::oauth::check_extension("extensions", k, v)
                .map_err(|e| ClientError::invalid_arg(e.to_string()))?;
            pairs.push((k.to_string(), v.to_string()));
        }
        token.token = Some(OAuthToken {
            value: Secret::new(value),
            expires_at_ms,
            principal,
            extensions: pairs,
        });
        Ok(())
    })
}

/// Reports that no token could be had: the authentication that asked fails with
/// `ODK_ERR__AUTHENTICATION` and `reason` (no secret in it, please).
///
/// Thread safety: only on `token`, from inside the callback that received it.
///
/// # Safety
/// `token` is the callback's; `reason` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn odk_oauthbearer_token_set_failure(
    token: *mut odk_oauthbearer_token_t,
    reason: *const c_char,
) -> odk_err_t {
    guard_err(std::ptr::null_mut(), 0, || {
        // SAFETY: per the contract.
        let token = unsafe { token.as_mut() }
            .ok_or_else(|| ClientError::invalid_arg("token must not be NULL"))?;
        let reason = if reason.is_null() {
            "no reason given".to_string()
        } else {
            // SAFETY: per the contract.
            unsafe { str_arg(reason, "reason") }?.to_string()
        };
        token.failure = Some(reason);
        Ok(())
    })
}

/// The application's callback as the core's token source.
#[derive(Debug)]
pub(crate) struct CTokenProvider {
    callback:
        unsafe extern "C" fn(*mut odk_oauthbearer_token_t, *const c_char, *mut c_void) -> odk_err_t,
    config: Arc<CString>,
    opaque: Opaque,
}

impl CTokenProvider {
    /// A provider calling `callback` with `config` (`sasl.oauthbearer.config`) and `opaque`.
    pub(crate) fn new(
        callback: unsafe extern "C" fn(
            *mut odk_oauthbearer_token_t,
            *const c_char,
            *mut c_void,
        ) -> odk_err_t,
        config: &str,
        opaque: *mut c_void,
    ) -> Self {
        CTokenProvider {
            callback,
            config: Arc::new(CString::new(config.replace('\0', "")).unwrap_or_default()),
            opaque: Opaque(opaque),
        }
    }
}

fn failed(detail: String) -> odk_core::Error {
    odk_core::Error::SaslAuthentication {
        broker: "oauthbearer token callback".into(),
        detail,
    }
}

impl TokenProvider for CTokenProvider {
    fn token(&self) -> TokenFuture {
        let callback = self.callback;
        let config = self.config.clone();
        let opaque = Opaque(self.opaque.0);
        Box::pin(async move {
            let joined = tokio::task::spawn_blocking(move || {
                let opaque = opaque;
                let mut slot = odk_oauthbearer_token_t::default();
                // SAFETY: the application's callback, with a token valid for the call, a
                // NUL-terminated config string and its own opaque.
                let rc = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
                    callback(&mut slot, config.as_ptr(), opaque.0)
                }));
                (rc, slot)
            })
            .await
            .map_err(|_| failed("the token callback did not return".into()))?;
            match joined {
                (
                    Ok(odk_err_t::ODK_ERR_NO_ERROR),
                    odk_oauthbearer_token_t { token: Some(t), .. },
                ) => Ok(t),
                (
                    _,
                    odk_oauthbearer_token_t {
                        failure: Some(why), ..
                    },
                ) => Err(failed(why)),
                (Ok(odk_err_t::ODK_ERR_NO_ERROR), _) => {
                    Err(failed("the token callback set no token".into()))
                }
                (Ok(code), _) => Err(failed(format!("the token callback returned {code:?}"))),
                (Err(_), _) => Err(failed("the token callback panicked".into())),
            }
        })
    }
}
