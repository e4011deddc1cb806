/// A provider credential could not be obtained: the token endpoint refused the service account's assertion
/// (`retryable` false: a configuration error, the push is kept and the worker says so loudly), or it could not be
/// reached or failed (`retryable`: the push is tried again later).
struct CredentialError: Error, CustomStringConvertible {
    var message: String
    var retryable: Bool

    var description: String { message }
}
