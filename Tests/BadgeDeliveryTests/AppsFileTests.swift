import BadgeWire
import Crypto
import CryptoExtras
import Foundation
import ProviderAuth
import Testing

@testable import BadgeDelivery

/// `--apps-file`: read whole at start, every error naming its line; and which app serves a push.
@Suite("Apps file")
struct AppsFileTests {
    /// A directory with an APNs key and a service-account file, removed at the end.
    private final class Files: Sendable {
        let directory: String

        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("apps-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try P256.Signing.PrivateKey().pemRepresentation.write(
                toFile: directory + "/AuthKey_K1.p8", atomically: true, encoding: .utf8)
            let account: [String: String] = [
                "type": "service_account", "project_id": "amen-prod", "client_email": "pusher@amen.iam.example",
                "token_uri": "https://oauth2.googleapis.com/token",
                "private_key": try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation,
            ]
            try JSONSerialization.data(withJSONObject: account).write(
                to: URL(fileURLWithPath: directory + "/firebase.json"))
        }

        func parse(_ text: String) throws -> (apps: [AppConfiguration], defaultApp: String?) {
            try AppsFile.parse(text, file: "apps.yaml", directory: directory)
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }
    }

    @Test func aFileOfTwoAppsReadsWithRelativeFilesAndDefaults() throws {
        let files = try Files()
        let (apps, defaultApp) = try files.parse(
            """
            default_app: psalms
            apps:
              amen:
                apns:
                  key_file: AuthKey_K1.p8
                  key_id: K1
                  team_id: T1
                  topics: [com.example.amen, com.example.amen.voip]
                  environment: sandbox
                fcm:
                  credentials_file: firebase.json
              psalms:
                fcm: {project: psalms-prod}
            """)
        #expect(apps.map(\.name) == ["amen", "psalms"])
        #expect(defaultApp == "psalms")
        let amen = apps[0]
        guard case .token(let key) = amen.apns?.credentials else {
            Issue.record("amen's key was not read")
            return
        }
        #expect(key.keyID == "K1" && key.teamID == "T1")
        #expect(amen.apns?.topics == ["com.example.amen", "com.example.amen.voip"])
        #expect(amen.apns?.environment == .sandbox)
        #expect(amen.fcm?.credentials?.clientEmail == "pusher@amen.iam.example")
        #expect(amen.fcm?.project == "amen-prod", "the service account's project_id")
        #expect(apps[1].apns == nil && apps[1].fcm?.project == "psalms-prod" && apps[1].fcm?.credentials == nil)
    }

    @Test(
        arguments: [
            ("apps:\n  amen:\n    apns: {topics: [a.b]\n", 4, "is not valid YAML"),
            ("apps:\n  amen:\n    apns:\n      topic: com.example.amen\n", 4, "unknown key topic"),
            ("apps:\n  amen:\n    apns:\n      key_file: AuthKey_K1.p8\n      key_id: K1\n", 4, "needs team_id"),
            (
                "apps:\n  amen:\n    apns:\n      key_file: AuthKey_K1.p8\n      key_id: K1\n      team_id: T1\n", 4,
                "needs topics"
            ),
            ("apps:\n  amen:\n    apns:\n      key_file: nope.p8\n      key_id: K\n      team_id: T\n", 4, "nope.p8"),
            ("apps:\n  amen:\n    fcm: {project: p}\ndefault_app: psalms\n", 4, "default_app names psalms"),
            ("apps:\n  a:\n    apns: {topics: [x.y]}\n  b:\n    apns: {topics: [x.y]}\n", 5, "already app a's"),
            ("apps:\n  bad/name:\n    fcm: {project: p}\n", 2, "must be 1-64 of"),
            ("apps:\n  amen: {}\n", 2, "has neither apns nor fcm"),
            ("apps:\n  amen:\n    apns:\n      environment: staging\n", 4, "production or sandbox"),
            // Yams finds a repeated key itself and names the mapping's first line.
            ("apps:\n  amen:\n    fcm: {project: p}\n  amen:\n    fcm: {project: q}\n", 2, "repeats the key amen"),
            ("default_app: x\n", 1, "has no apps"),
            ("apps: []\n", 1, "must be a mapping"),
        ] as [(String, Int, String)])
    func anErrorNamesItsLine(text: String, line: Int, message: String) throws {
        let files = try Files()
        do {
            _ = try files.parse(text)
            Issue.record("accepted: \(text)")
        } catch let problem as AppsFile.Problem {
            #expect(problem.line == line, "\(problem)")
            #expect(problem.code.rawValue == "invalid_apps_file", "\(problem)")
            #expect(problem.description.contains(message), "\(problem)")
            #expect(problem.description.hasPrefix("apps.yaml line \(line): "), "\(problem)")
        }
    }

    @Test func theRegistryPicksTheNamedAppThenTheTopicsOwnerThenTheDefault() {
        let registry = AppRegistry(
            apps: [
                AppConfiguration(
                    name: "amen", apns: AppConfiguration.APNs(credentials: nil, topics: ["com.example.amen"]),
                    fcm: AppConfiguration.FCM(credentials: nil, project: "amen")),
                AppConfiguration(name: "psalms", apns: AppConfiguration.APNs(credentials: nil, topics: ["org.psalms"])),
            ], defaultApp: "amen")
        func resolve(_ app: String?, _ provider: PushProvider, _ topic: String?) -> String {
            switch registry.resolve(app: app, provider: provider, topic: topic) {
            case .success(let found): found.name
            case .failure(let unserved): "\(unserved.code.rawValue): \(unserved.message)"
            }
        }
        #expect(resolve("psalms", .apns, "com.example.amen") == "psalms", "a named app wins over the topic")
        #expect(resolve(nil, .apns, "org.psalms") == "psalms")
        #expect(resolve(nil, .apns, "com.unknown") == "amen", "an unowned topic goes with the default app")
        #expect(resolve(nil, .fcm, "org.psalms") == "amen", "topics select APNs apps only")
        #expect(resolve("psalms", .fcm, nil) == "provider_not_configured: app psalms has no FCM configuration")
        #expect(resolve("hymns", .apns, nil) == "provider_not_configured: no app hymns is configured")
        let noDefault = AppRegistry(apps: registry.apps.values.sorted { $0.name < $1.name }, defaultApp: nil)
        guard case .failure = noDefault.resolve(app: nil, provider: .apns, topic: nil) else {
            Issue.record("two apps and no default served a device that names none")
            return
        }
    }

    @Test func theSingleAppSettingsAreOneAppAndAppsSpreadOverOneAccountEach() throws {
        let key = try APNsSigningKey(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "K1", teamID: "T1")
        let single = DeliveryConfiguration(apnsCredentials: .token(key), providers: [.apns])
        #expect(single.effectiveApps.map(\.name) == [AppConfiguration.defaultName])
        #expect(single.effectiveApps[0].fcm == nil)
        #expect(single.registry.defaultApp == AppConfiguration.defaultName)
        var fleet = DeliveryConfiguration()
        let other = try APNsSigningKey(pem: P256.Signing.PrivateKey().pemRepresentation, keyID: "K2", teamID: "T2")
        fleet.serve(
            apps: [
                AppConfiguration(name: "a", apns: AppConfiguration.APNs(credentials: .token(key), topics: ["a.a"])),
                AppConfiguration(name: "b", apns: AppConfiguration.APNs(credentials: .token(key), topics: ["b.b"])),
                AppConfiguration(name: "c", apns: AppConfiguration.APNs(credentials: .token(other), topics: ["c.c"])),
            ], defaultApp: nil)
        #expect(fleet.providers == [.apns])
        let accounts = Set(fleet.effectiveApps.compactMap { $0.account(.apns) })
        #expect(accounts.count == 2, "a and b share team T1's key; c has its own")
        let clients = try ProviderClients(configuration: fleet)
        #expect(clients.accountCount(.apns) == 2 && clients.accountCount(.fcm) == 0)
        let (a, b) = (clients.pool(.apns, app: "a"), clients.pool(.apns, app: "b"))
        #expect(!a.isEmpty && a.count == b.count && zip(a, b).allSatisfy { $0 === $1 }, "one pool for one account")
        #expect(zip(a, clients.pool(.apns, app: "c")).allSatisfy { $0 !== $1 }, "never shared by two accounts")
        try clients.pools.values.joined().forEach { try $0.syncShutdown() }
    }
}
