import Crypto
import CryptoExtras
import Foundation

/// Real credentials made at test time in a fresh directory: a self-signed TLS certificate for 127.0.0.1 and
/// localhost (by `openssl`), an APNs `.p8` key with its public half, and an FCM service-account file with its
/// public key, the account's `token_uri` pointing at a sink.
public struct TestCredentials: Sendable {
    /// The directory holding every file.
    public let directory: URL
    /// The TLS certificate (also the trusted root for clients: pass it as the CA file).
    public let certificateFile: String
    /// The TLS certificate's private key.
    public let certificateKeyFile: String
    /// A client certificate (self-signed, subject the APNs topic, as Apple's push certificates name it) and key,
    /// for APNs certificate auth; the sink trusts it with `tlsClientCAFile`.
    public let clientCertificateFile: String
    public let clientKeyFile: String
    /// The APNs key id and team id.
    public let apnsKeyID = "TESTKEY001"
    public let apnsTeamID = "TESTTEAM01"
    /// The APNs `.p8` file and its public key.
    public let apnsKeyFile: String
    public let apnsPublicKeyFile: String
    /// The FCM service-account file and its public key.
    public let serviceAccountFile: String
    public let serviceAccountPublicKeyFile: String
    /// The project the service account names.
    public let fcmProject = "test-project"

    private let accountKey: _RSA.Signing.PrivateKey

    /// Makes every file; `tokenURI` is what the service account's `token_uri` says (see
    /// ``writeServiceAccount(tokenURI:)`` for another).
    public init(tokenURI: String = "https://127.0.0.1/token") throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "badgepipe-credentials-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        let path = { (name: String) in directory.appendingPathComponent(name).path }
        certificateFile = path("sink.crt")
        certificateKeyFile = path("sink.key")
        try Self.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                "-keyout", certificateKeyFile, "-out", certificateFile,
            ])

        clientCertificateFile = path("client.crt")
        clientKeyFile = path("client.key")
        try Self.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                "-subj", "/UID=com.example.test/CN=Apple Push Services: com.example.test",
                "-keyout", clientKeyFile, "-out", clientCertificateFile,
            ])

        let apnsKey = P256.Signing.PrivateKey()
        apnsKeyFile = path("AuthKey_TESTKEY001.p8")
        apnsPublicKeyFile = path("apns-public.pem")
        try apnsKey.pemRepresentation.write(toFile: apnsKeyFile, atomically: true, encoding: .utf8)
        try apnsKey.publicKey.pemRepresentation.write(toFile: apnsPublicKeyFile, atomically: true, encoding: .utf8)

        let accountKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        self.accountKey = accountKey
        serviceAccountFile = path("service-account.json")
        serviceAccountPublicKeyFile = path("service-account-public.pem")
        try accountKey.publicKey.pemRepresentation.write(
            toFile: serviceAccountPublicKeyFile, atomically: true, encoding: .utf8)
        _ = try writeServiceAccount(tokenURI: tokenURI, to: serviceAccountFile)
    }

    /// Writes another APNs key (another team's, say) as `AuthKey_<keyID>.p8` and its public half; returns both paths.
    public func writeAPNsKey(keyID: String) throws -> (keyFile: String, publicKeyFile: String) {
        let key = P256.Signing.PrivateKey()
        let keyFile = directory.appendingPathComponent("AuthKey_\(keyID).p8").path
        let publicKeyFile = directory.appendingPathComponent("apns-public-\(keyID).pem").path
        try key.pemRepresentation.write(toFile: keyFile, atomically: true, encoding: .utf8)
        try key.publicKey.pemRepresentation.write(toFile: publicKeyFile, atomically: true, encoding: .utf8)
        return (keyFile, publicKeyFile)
    }

    /// Writes a service-account file for the same account whose `token_uri` is `tokenURI`; returns its path.
    public func writeServiceAccount(tokenURI: String, to file: String? = nil) throws -> String {
        let file = file ?? directory.appendingPathComponent("service-account-\(UUID().uuidString).json").path
        let account: [String: String] = [
            "type": "service_account", "project_id": fcmProject, "private_key_id": "k1",
            "private_key": accountKey.pemRepresentation,
            "client_email": "pusher@\(fcmProject).iam.gserviceaccount.com", "token_uri": tokenURI,
        ]
        try JSONSerialization.data(withJSONObject: account).write(to: URL(fileURLWithPath: file))
        return file
    }

    /// Writes the file of another service account, with a key of its own, for `project` (the account
    /// `pusher@<project>.iam.gserviceaccount.com`); returns its path.
    public func writeOtherServiceAccount(project: String, tokenURI: String) throws -> String {
        let file = directory.appendingPathComponent("service-account-\(project).json").path
        let account: [String: String] = [
            "type": "service_account", "project_id": project, "private_key_id": "k1",
            "private_key": try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation,
            "client_email": "pusher@\(project).iam.gserviceaccount.com", "token_uri": tokenURI,
        ]
        try JSONSerialization.data(withJSONObject: account).write(to: URL(fileURLWithPath: file))
        return file
    }

    /// Writes `apps.yaml` in ``directory``, two apps under two Apple teams, and returns its path: `amen` signs with
    /// this set's APNs key and team for the topic `com.example.amen` and, for FCM, with `amenServiceAccount`;
    /// `psalms` with the key `psalmsKeyID` (written by ``writeAPNsKey(keyID:)``) of the team `psalmsTeamID` for
    /// `psalmsTopics`, in the APNs environment `psalmsEnvironment` when given, and for FCM with
    /// `psalmsServiceAccount` when given. With `defaultApp`, devices that name no app are that app's.
    public func writeTwoAppsFile(
        amenServiceAccount: String, psalmsKeyID: String, psalmsTeamID: String, psalmsTopics: [String],
        psalmsEnvironment: String? = nil, psalmsServiceAccount: String? = nil, defaultApp: String? = nil
    ) throws -> String {
        let file = directory.appendingPathComponent("apps.yaml").path
        var psalmsAPNs = [
            "key_file: AuthKey_\(psalmsKeyID).p8", "key_id: \(psalmsKeyID)", "team_id: \(psalmsTeamID)",
            "topics: [\(psalmsTopics.joined(separator: ", "))]",
        ]
        if let psalmsEnvironment { psalmsAPNs.append("environment: \(psalmsEnvironment)") }
        var lines = defaultApp.map { ["default_app: \($0)"] } ?? []
        lines += [
            "apps:",
            "  amen:",
            "    apns:",
            "      key_file: AuthKey_\(apnsKeyID).p8",
            "      key_id: \(apnsKeyID)",
            "      team_id: \(apnsTeamID)",
            "      topics: [com.example.amen]",
            "    fcm:",
            "      credentials_file: \(amenServiceAccount)",
            "  psalms:",
            "    apns: {\(psalmsAPNs.joined(separator: ", "))}",
        ]
        if let psalmsServiceAccount { lines.append("    fcm: {credentials_file: \(psalmsServiceAccount)}") }
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    /// Removes the directory.
    public func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    private static func run(_ command: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [command] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CredentialsError(description: "\(command) \(arguments.prefix(3)) failed")
        }
    }

    struct CredentialsError: Error, CustomStringConvertible {
        var description: String
    }
}
