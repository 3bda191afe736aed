//! API version negotiation: for every API, the highest version both sides support.

use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};

use super::codec::api_name;
use crate::{Error, Result};

/// An inclusive range of versions of one API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiVersionRange {
    /// The API key.
    pub api_key: i16,
    /// Lowest version.
    pub min: i16,
    /// Highest version.
    pub max: i16,
}

impl ApiVersionRange {
    /// The range our message schemas can encode and decode for `api_key`.
    pub fn supported_by_codec(api_key: ApiKey) -> ApiVersionRange {
        let range = super::codec::codec_versions(api_key);
        ApiVersionRange {
            api_key: api_key as i16,
            min: range.min,
            max: range.max,
        }
    }
}

/// The outcome of negotiating with one broker: for each API, either the chosen version or the
/// reason there is none.
#[derive(Debug, Clone, Default)]
pub struct NegotiatedVersions {
    ours: Vec<ApiVersionRange>,
    theirs: Vec<ApiVersionRange>,
}

impl NegotiatedVersions {
    /// Negotiates `ours` (what this client implements) against a broker's ranges.
    pub fn new(ours: Vec<ApiVersionRange>, theirs: Vec<ApiVersionRange>) -> Self {
        NegotiatedVersions { ours, theirs }
    }

    /// Negotiates every API our codec supports against an ApiVersions response.
    pub fn from_response(response: &ApiVersionsResponse) -> Self {
        let ours = ApiKey::iter()
            .map(ApiVersionRange::supported_by_codec)
            .collect();
        let theirs = response
            .api_keys
            .iter()
            .map(|k| ApiVersionRange {
                api_key: k.api_key,
                min: k.min_version,
                max: k.max_version,
            })
            .collect();
        NegotiatedVersions::new(ours, theirs)
    }

    /// Restricts our side of `api_key` to `min..=max` (for features implemented only for some
    /// versions).
    pub fn limit_ours(&mut self, api_key: ApiKey, min: i16, max: i16) {
        let key = api_key as i16;
        match self.ours.iter_mut().find(|r| r.api_key == key) {
            Some(r) => {
                r.min = r.min.max(min);
                r.max = r.max.min(max);
            }
            None => self.ours.push(ApiVersionRange {
                api_key: key,
                min,
                max,
            }),
        }
    }

    /// The broker's advertised range for `api_key`, if it offers the API.
    pub fn broker_range(&self, api_key: ApiKey) -> Option<ApiVersionRange> {
        self.theirs
            .iter()
            .copied()
            .find(|r| r.api_key == api_key as i16)
    }

    /// The highest version of `api_key` both sides support, or a clear error saying why none.
    pub fn version(&self, api_key: ApiKey) -> Result<i16> {
        let key = api_key as i16;
        let ours = self
            .ours
            .iter()
            .find(|r| r.api_key == key)
            .copied()
            .unwrap_or(ApiVersionRange {
                api_key: key,
                min: 0,
                max: -1,
            });
        let theirs = self.broker_range(api_key);
        let chosen = theirs.and_then(|t| {
            let lo = ours.min.max(t.min);
            let hi = ours.max.min(t.max);
            (lo <= hi).then_some(hi)
        });
        chosen.ok_or_else(|| Error::NoCommonVersion {
            api: api_name(key),
            ours_min: ours.min,
            ours_max: ours.max,
            broker: theirs
                .map(|t| format!("{}..={}", t.min, t.max))
                .unwrap_or_else(|| "not offered".to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::api_versions_response::ApiVersion;

    fn broker(ranges: &[(i16, i16, i16)]) -> ApiVersionsResponse {
        ApiVersionsResponse::default().with_api_keys(
            ranges
                .iter()
                .map(|&(k, min, max)| {
                    ApiVersion::default()
                        .with_api_key(k)
                        .with_min_version(min)
                        .with_max_version(max)
                })
                .collect(),
        )
    }

    #[test]
    fn picks_highest_common_version() {
        let n = NegotiatedVersions::from_response(&broker(&[(0, 0, 11), (1, 4, 99), (3, 0, 12)]));
        assert_eq!(n.version(ApiKey::Produce).unwrap(), 11);
        // Broker newer than us: our max wins.
        assert_eq!(
            n.version(ApiKey::Fetch).unwrap(),
            ApiKey::Fetch.valid_versions().max
        );
        assert_eq!(n.version(ApiKey::Metadata).unwrap(), 12);
    }

    #[test]
    fn clear_error_without_overlap_or_offer() {
        let mut n = NegotiatedVersions::from_response(&broker(&[(0, 0, 2)]));
        let err = n.version(ApiKey::Produce).unwrap_err();
        assert!(err.to_string().contains("Produce"), "{err}");
        assert!(err.to_string().contains("0..=2"), "{err}");
        let err = n.version(ApiKey::Fetch).unwrap_err();
        assert!(err.to_string().contains("not offered"), "{err}");
        n.limit_ours(ApiKey::Produce, 0, 1);
        assert!(n.version(ApiKey::Produce).is_err());
    }
}
