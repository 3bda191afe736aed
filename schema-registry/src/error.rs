//! The registry's one error type: every variant carries Confluent's `error_code` (the HTTP status
//! is its first three digits), so a client sees exactly what Confluent's registry would answer.

/// What went wrong, with Confluent Schema Registry's error code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 40401.
    #[error("Subject '{0}' not found.")]
    SubjectNotFound(String),
    /// 40402.
    #[error("Version {0} not found.")]
    VersionNotFound(String),
    /// 40403.
    #[error("Schema {0} not found")]
    SchemaNotFound(String),
    /// 40404.
    #[error("Subject '{0}' was soft deleted.Set permanent=true to delete permanently")]
    SubjectSoftDeleted(String),
    /// 40405.
    #[error("Subject '{0}' was not deleted first before being permanently deleted")]
    SubjectNotSoftDeleted(String),
    /// 40406.
    #[error("Subject '{0}' Version {1} was soft deleted.Set permanent=true to delete permanently")]
    VersionSoftDeleted(String, i32),
    /// 40407.
    #[error("Subject '{0}' Version {1} was not deleted first before being permanently deleted")]
    VersionNotSoftDeleted(String, i32),
    /// 40408.
    #[error("Subject '{0}' does not have subject-level compatibility configured")]
    SubjectCompatibilityNotConfigured(String),
    /// 40409.
    #[error("Subject '{0}' does not have subject-level mode configured")]
    SubjectModeNotConfigured(String),
    /// 409.
    #[error("Schema being registered is incompatible with an earlier schema for subject \"{subject}\", details: [{}]", .messages.join(", "))]
    Incompatible {
        /// The subject.
        subject: String,
        /// What is incompatible, one line per problem.
        messages: Vec<String>,
    },
    /// 42201.
    #[error("Invalid schema: {0}")]
    InvalidSchema(String),
    /// 42201, for a compatibility rule this registry does not implement: the check is refused
    /// rather than passed.
    #[error("Invalid schema: compatibility check not supported: {0}")]
    RuleNotSupported(String),
    /// 42202.
    #[error("The specified version '{0}' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"")]
    InvalidVersion(String),
    /// 42203.
    #[error("Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive")]
    InvalidCompatibilityLevel,
    /// 42204.
    #[error("Invalid mode. Valid values are READWRITE, READONLY, IMPORT")]
    InvalidMode,
    /// 42205.
    #[error("{0}")]
    OperationNotPermitted(String),
    /// 42206.
    #[error("One or more references exist to the schema {{magic=1,keytype=SCHEMA,subject={0},version={1}}}.")]
    ReferenceExists(String, i32),
    /// 42207 (unprocessable entity: a field of the body has the wrong shape).
    #[error("{0}")]
    Unprocessable(String),
    /// 400: the body is not JSON.
    #[error("{0}")]
    BadRequest(String),
    /// 401.
    #[error("Unauthorized")]
    Unauthorized,
    /// 404 for a path that is not part of the API.
    #[error("HTTP 404 Not Found")]
    NotFound,
    /// 405.
    #[error("HTTP 405 Method Not Allowed")]
    MethodNotAllowed,
    /// 413.
    #[error("Request body of more than {0} bytes")]
    PayloadTooLarge(usize),
    /// 415.
    #[error("HTTP 415 Unsupported Media Type")]
    UnsupportedMediaType,
    /// 50001: the `_schemas` topic could not be read or written.
    #[error("Error in the backend data store: {0}")]
    Store(String),
    /// A value does not fit its schema, or bytes are not a value of the schema (serializers;
    /// never an HTTP answer of the registry).
    #[error("serialization: {0}")]
    Serialization(String),
    /// The registry answered a client with an error (the client side of the serde module).
    #[error("schema registry error {code}: {message}")]
    Remote {
        /// Confluent's error code (or the HTTP status when the body had none).
        code: u32,
        /// The registry's message.
        message: String,
    },
    /// 50002: a write was not read back in time.
    #[error("Write to the Kafka store timed out while waiting for its record to be read back")]
    Timeout,
}

impl Error {
    /// Confluent's `error_code`.
    pub fn error_code(&self) -> u32 {
        match self {
            Error::SubjectNotFound(_) => 40401,
            Error::VersionNotFound(_) => 40402,
            Error::SchemaNotFound(_) => 40403,
            Error::SubjectSoftDeleted(_) => 40404,
            Error::SubjectNotSoftDeleted(_) => 40405,
            Error::VersionSoftDeleted(..) => 40406,
            Error::VersionNotSoftDeleted(..) => 40407,
            Error::SubjectCompatibilityNotConfigured(_) => 40408,
            Error::SubjectModeNotConfigured(_) => 40409,
            Error::Incompatible { .. } => 409,
            Error::InvalidSchema(_) | Error::RuleNotSupported(_) => 42201,
            Error::InvalidVersion(_) => 42202,
            Error::InvalidCompatibilityLevel => 42203,
            Error::InvalidMode => 42204,
            Error::OperationNotPermitted(_) => 42205,
            Error::ReferenceExists(..) => 42206,
            Error::Unprocessable(_) => 422,
            Error::BadRequest(_) => 400,
            Error::Unauthorized => 401,
            Error::NotFound => 404,
            Error::MethodNotAllowed => 405,
            Error::PayloadTooLarge(_) => 413,
            Error::UnsupportedMediaType => 415,
            Error::Store(_) => 50001,
            Error::Serialization(_) => 400,
            Error::Remote { code, .. } => *code,
            Error::Timeout => 50002,
        }
    }

    /// The HTTP status: the first three digits of the error code.
    pub fn status(&self) -> u16 {
        let code = self.error_code();
        let status = if code >= 10_000 { code / 100 } else { code };
        u16::try_from(status).unwrap_or(500)
    }

    /// Whether a client may retry the same request (store trouble, timeouts).
    pub fn is_retriable(&self) -> bool {
        match self {
            Error::Store(_) | Error::Timeout => true,
            Error::Remote { code, .. } => *code >= 500 || *code == 408 || *code == 429,
            _ => false,
        }
    }
}

/// The registry's result type.
pub type Result<T> = std::result::Result<T, Error>;
