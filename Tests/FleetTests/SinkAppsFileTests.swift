import BadgeDelivery
import BadgePipeTesting
import Foundation
import ProviderAuth
import TestCredentials
import TestServices
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `badgepipe sink --apps-file`: the sink, started from the command line with the worker's own apps file (two
/// apps under two Apple teams, each with its Firebase project and service account), verifies each app's
/// credentials as Apple and Google do and records which app each push was for. The pushes are signed with the
/// credentials the worker loads from the same file.
@Suite("Sink apps file", .serialized, .timeLimit(.minutes(2)))
struct SinkAppsFileTests {
    private static let psalmsKeyID = "PSALMSKEY3"
    private static let psalmsTeamID = "PSALMSTEAM"

    /// A running `badgepipe sink`, stopped by ``stop()``.
    private struct Sink {
        let process: Process
        let url: String
        let log: URL

        func stop() {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }

        func send(
            _ method: String, _ path: String, body: String = "", headers: [String: String] = [:]
        ) async throws -> (status: Int, json: [String: Any]) {
            let answer = try await http(
                url + path, method: method, body: method == "GET" ? nil : body, headers: headers)
            return (answer.status, jsonObject(answer.text))
        }
    }

    private static func startSink(appsFile: String, directory: URL) async throws -> Sink {
        let port = try freeListenPort()
        let process = Process()
        process.executableURL = WorkerProcess.executable
        process.arguments = ["sink", "--port", "\(port)", "--apps-file", appsFile]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BADGEPIPE_") }
        let log = directory.appendingPathComponent("sink.log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let sink = Sink(process: process, url: "http://127.0.0.1:\(port)", log: log)
        // Answering, or exited: nothing to wait for any more.
        let started = try? await eventuallyValue(
            "the sink answering or exited", timeout: .seconds(10), every: .milliseconds(50)
        ) {
            if (try? await sink.send("GET", "/stats"))?.status == 200 { return true }
            return process.isRunning ? nil : false
        }
        if started == true { return sink }
        sink.stop()
        throw FleetError("the sink did not start: \(String(decoding: try Data(contentsOf: log), as: UTF8.self))")
    }

    @Test func theSinkPlaysEveryAppOfTheWorkersAppsFile() async throws {
        let credentials = try TestCredentials()
        defer { credentials.remove() }
        _ = try credentials.writeAPNsKey(keyID: Self.psalmsKeyID)
        // The token URI is not used by the sink; the assertions' aud need only end in /token.
        let tokenURI = "http://127.0.0.1/token"
        let amenAccount = try credentials.writeServiceAccount(tokenURI: tokenURI)
        let psalmsAccount = try credentials.writeOtherServiceAccount(project: "psalms-prod", tokenURI: tokenURI)
        let strangerAccount = try credentials.writeOtherServiceAccount(project: "hymns-prod", tokenURI: tokenURI)
        let appsFile = try credentials.writeTwoAppsFile(
            amenServiceAccount: amenAccount, psalmsKeyID: Self.psalmsKeyID, psalmsTeamID: Self.psalmsTeamID,
            psalmsTopics: ["org.psalms.app"], psalmsServiceAccount: psalmsAccount)
        // The credentials the worker signs with, read from the same file.
        let apps = Dictionary(uniqueKeysWithValues: try AppsFile.load(path: appsFile).apps.map { ($0.name, $0) })
        let now = Int64(Date().timeIntervalSince1970)
        func bearer(_ app: String) throws -> String {
            guard case .token(let key) = apps[app]?.apns?.credentials else { throw FleetError("no key for \(app)") }
            return "bearer " + (try key.token(issuedAt: now))
        }
        let amenFCM = try #require(apps["amen"]?.fcm?.credentials)
        let psalmsFCM = try #require(apps["psalms"]?.fcm?.credentials)
        let stranger = try ServiceAccount(file: strangerAccount)

        let sink = try await Self.startSink(appsFile: appsFile, directory: credentials.directory)
        defer { sink.stop() }
        func apns(_ token: String, topic: String, authorization: String?) async throws -> (Int, String?) {
            var headers = ["apns-topic": topic]
            headers["authorization"] = authorization
            let answer = try await sink.send(
                "POST", "/3/device/\(token)", body: #"{"aps":{"badge":1}}"#, headers: headers)
            return (answer.status, answer.json["reason"] as? String)
        }
        #expect(try await apns("aa01", topic: "com.example.amen", authorization: try bearer("amen")) == (200, nil))
        #expect(try await apns("aa02", topic: "org.psalms.app", authorization: try bearer("psalms")) == (200, nil))
        #expect(
            try await apns("aa03", topic: "com.example.amen", authorization: try bearer("psalms"))
                == (400, "TopicDisallowed"))
        #expect(
            try await apns("aa04", topic: "com.example.amen", authorization: nil) == (403, "MissingProviderToken"))

        func accessToken(_ account: ServiceAccount) async throws -> (Int, String?, String?) {
            let form =
                "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion="
                + (try account.assertion(issuedAt: now))
            let answer = try await sink.send(
                "POST", "/token", body: form, headers: ["content-type": "application/x-www-form-urlencoded"])
            return (answer.status, answer.json["access_token"] as? String, answer.json["error"] as? String)
        }
        func fcm(_ token: String, project: String, accessToken: String) async throws -> (Int, String?) {
            let answer = try await sink.send(
                "POST", "/v1/projects/\(project)/messages:send",
                body: #"{"message":{"token":"\#(token)","data":{"badge":"1"}}}"#,
                headers: ["authorization": "Bearer \(accessToken)", "content-type": "application/json"])
            return (answer.status, (answer.json["error"] as? [String: Any])?["status"] as? String)
        }
        let (amenStatus, amenToken, _) = try await accessToken(amenFCM)
        let (psalmsStatus, psalmsToken, _) = try await accessToken(psalmsFCM)
        #expect(amenStatus == 200 && psalmsStatus == 200)
        let amenAccess = try #require(amenToken)
        let psalmsAccess = try #require(psalmsToken)
        #expect(try await fcm("fcm-01", project: credentials.fcmProject, accessToken: amenAccess) == (200, nil))
        #expect(try await fcm("fcm-02", project: "psalms-prod", accessToken: psalmsAccess) == (200, nil))
        #expect(
            try await fcm("fcm-03", project: credentials.fcmProject, accessToken: psalmsAccess)
                == (403, "PERMISSION_DENIED"))
        #expect(try await fcm("fcm-05", project: "hymns-prod", accessToken: amenAccess) == (403, "PERMISSION_DENIED"))
        // A service account the file does not declare gets no access token, and its own assertion is no credential.
        let (strangerStatus, strangerToken, strangerError) = try await accessToken(stranger)
        #expect(strangerStatus == 400 && strangerToken == nil && strangerError == "invalid_grant")
        #expect(
            try await fcm("fcm-04", project: "hymns-prod", accessToken: try stranger.assertion(issuedAt: now))
                == (401, "UNAUTHENTICATED"))

        // Each push is recorded with the app its credential is, and whether it verified.
        let deliveries = try await SinkClient(url: sink.url).deliveries()
        var recorded: [String: (app: String?, verified: Bool?)] = [:]
        for delivery in deliveries {
            let authorization = delivery.headers["authorization"] ?? .null
            let verified: Bool? =
                switch authorization["verified"] {
                case .bool(let value): value
                default: nil
                }
            recorded[delivery.token] = (authorization["app"].string, verified)
        }
        #expect(recorded["aa01"]?.app == "amen" && recorded["aa01"]?.verified == true)
        #expect(recorded["aa02"]?.app == "psalms" && recorded["aa02"]?.verified == true)
        #expect(recorded["aa03"]?.app == "psalms" && recorded["aa03"]?.verified == false)
        #expect(recorded["fcm-01"]?.app == "amen" && recorded["fcm-01"]?.verified == true)
        #expect(recorded["fcm-02"]?.app == "psalms" && recorded["fcm-02"]?.verified == true)
        #expect(recorded["fcm-03"]?.app == "amen" && recorded["fcm-03"]?.verified == false)
        #expect(recorded["fcm-04"]?.verified != true)
        #expect(recorded["fcm-05"]?.app == nil && recorded["fcm-05"]?.verified == false)
        #expect(deliveries.count == 9)
    }

    @Test func aBadAppsFileStopsTheSinkNamingTheLine() throws {
        let credentials = try TestCredentials()
        defer { credentials.remove() }
        let appsFile = credentials.directory.appendingPathComponent("apps.yaml").path
        try "apps:\n  amen:\n    apns:\n      topic: com.example.amen\n"
            .write(toFile: appsFile, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = WorkerProcess.executable
        process.arguments = ["sink", "--port", "0", "--apps-file", appsFile]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BADGEPIPE_") }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus != 0)
        #expect(output.contains("--apps-file \(appsFile) line 4: app amen apns has an unknown key topic"), "\(output)")
    }
}
