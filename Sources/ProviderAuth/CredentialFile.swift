import Foundation

/// Key, certificate and credentials files, read whole: for the worker (which signs) and the sink (which verifies).
public enum CredentialFile {
    /// The text of the file at `path`, or `unreadable_file` naming `what` and the path.
    public static func text(_ path: String, what: String) throws(AuthError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AuthError(.unreadableFile, "cannot read the \(what) \(path)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
