import BadgeCore
import BadgeDelivery
import BadgeSink
@_spi(Testing) import BadgeStore
import BadgeWire
import Foundation
import Synchronization
import TestCredentials
import Testing

/// Several apps in one fleet, configured by an apps file: two apps under two Apple teams (each with its own key)
/// and one Firebase project, against two sinks in TLS mode (production and sandbox hosts) that play the same apps:
/// each device's pushes go with its own app's credentials and topic, which the sinks' verification proves (a key
/// pushing to another team's topic, or a service account to another project, would be refused), a device names
/// its app or its topic selects it, the default app takes the rest, and a device of an app or provider that is not
/// configured is refused while the others flow.
@Suite("Several apps", .serialized, .timeLimit(.minutes(3)))
struct SeveralAppsTests {
    private static let otherKeyID = "OTHERKEY02"
    private static let otherTeamID = "OTHERTEAM2"

    private static func token(_ seed: Int) -> String {
        String(repeating: String(format: "%08x", seed), count: 8)
    }

    private static func register(
        _ token: String, provider: String, app: String? = nil, topic: String? = nil, environment: String? = nil,
        id: String
    ) -> JSONValue {
        var device: [(key: String, value: JSONValue)] = [
            (key: "token", value: .string(token)), (key: "provider", value: .string(provider)),
        ]
        if let app { device.append((key: "app", value: .string(app))) }
        if let topic { device.append((key: "topic", value: .string(topic))) }
        if let environment { device.append((key: "environment", value: .string(environment))) }
        return [
            "id": .string(id), "type": "device_registered", "recipient": "u-multi",
            "occurred_at": "2026-11-21T09:00:00Z", "device": .object(device),
        ]
    }

    @Test func eachDevicesPushesGoWithItsOwnAppsCredentials() async throws {
        let credentials = try TestCredentials()
        defer { credentials.remove() }
        // The second team's key.
        let otherPublicFile = try credentials.writeAPNsKey(keyID: Self.otherKeyID).publicKeyFile
        let serviceAccount = "pusher@\(credentials.fcmProject).iam.gserviceaccount.com"
        var sink = SinkConfiguration(
            host: "127.0.0.1", port: 0, tlsCertificateFile: credentials.certificateFile,
            tlsKeyFile: credentials.certificateKeyFile,
            apnsKeyFiles: [credentials.apnsKeyID: credentials.apnsPublicKeyFile, Self.otherKeyID: otherPublicFile],
            apnsTeamID: credentials.apnsTeamID, fcmPublicKeyFile: credentials.serviceAccountPublicKeyFile)
        sink.apnsKeyTeams = [Self.otherKeyID: Self.otherTeamID]
        sink.apps = [
            SinkApp(
                name: "amen", apnsKeyIDs: [credentials.apnsKeyID], apnsTopics: ["com.example.amen"],
                fcmProjects: [credentials.fcmProject], fcmServiceAccounts: [serviceAccount]),
            SinkApp(
                name: "psalms", apnsKeyIDs: [Self.otherKeyID], apnsTopics: ["org.psalms.app", "org.psalms.app.voip"]),
        ]
        let built = Built()
        try await Pipeline.with(
            backend: .sqlite, sinks: [sink, sink],
            delivery: { ports in
                let account = try credentials.writeServiceAccount(tokenURI: "https://127.0.0.1:\(ports[0])/token")
                // Two apps under two Apple teams; one Firebase project.
                let appsFile = try credentials.writeTwoAppsFile(
                    amenServiceAccount: account, psalmsKeyID: Self.otherKeyID, psalmsTeamID: Self.otherTeamID,
                    psalmsTopics: ["org.psalms.app", "org.psalms.app.voip"], psalmsEnvironment: "sandbox",
                    defaultApp: "amen")
                let apps = try AppsFile.load(path: appsFile)
                var configuration = DeliveryConfiguration(
                    apnsBaseURL: "https://127.0.0.1:\(ports[0])", apnsSandboxBaseURL: "https://localhost:\(ports[1])",
                    fcmBaseURL: "https://127.0.0.1:\(ports[0])", trustedRootsFile: credentials.certificateFile,
                    initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(100))
                configuration.serve(apps: apps.apps, defaultApp: apps.defaultApp)
                #expect(configuration.problems.isEmpty, "\(configuration.problems)")
                built.value.withLock { $0 = configuration }
                return configuration
            }
        ) { pipeline in
            // One connection pool per account: two Apple teams, one service account.
            let configuration = try #require(built.value.withLock { $0 })
            let clients = try ProviderClients(configuration: configuration)
            #expect(clients.accountCount(.apns) == 2 && clients.accountCount(.fcm) == 1)
            try await clients.shutdown()
            let (production, sandbox) = (pipeline.sinks[0], pipeline.sinks[1])
            let amenByName = Self.token(31)
            let psalmsByTopic = Self.token(32)
            let amenAndroid = "fcm-" + Self.token(33)
            let byDefault = Self.token(34)
            let psalmsVoIPProduction = Self.token(35)
            let psalmsAndroid = "fcm-" + Self.token(36)
            let unknownApp = Self.token(37)
            for event in [
                Self.register(amenByName, provider: "apns", app: "amen", id: "m-d1"),
                Self.register(psalmsByTopic, provider: "apns", topic: "org.psalms.app", id: "m-d2"),
                Self.register(amenAndroid, provider: "fcm", app: "amen", id: "m-d3"),
                Self.register(byDefault, provider: "apns", id: "m-d4"),
                Self.register(
                    psalmsVoIPProduction, provider: "apns", app: "psalms", topic: "org.psalms.app.voip",
                    environment: "production", id: "m-d5"),
                Self.register(psalmsAndroid, provider: "fcm", app: "psalms", id: "m-d6"),
                Self.register(unknownApp, provider: "apns", app: "hymns", id: "m-d7"),
            ] {
                try await pipeline.publish(event)
            }
            // Every registration's badge-only push recorded before the follow: one still waiting when the follow's
            // alert is planned would be coalesced into it (superseded), and the device would get one push, not two.
            try await pipeline.waitUntilQuiet(outboxEmpty: true)
            try await pipeline.publish(ProviderTests.follow("u-multi", id: "m-n1"))
            try await pipeline.waitUntilQuiet(outboxEmpty: true)

            let all = production.receivedPushes() + sandbox.receivedPushes()
            #expect(all.allSatisfy { $0.status == 200 && $0.httpVersion == "2" }, "\(all.map(\.status))")
            #expect(all.allSatisfy { $0.authorization?.verified == true }, "every credential verified")
            func deliveries(_ token: String) -> [ReceivedPush] { all.filter { $0.token == token } }
            // amen: its team's key and topic, production host.
            for token in [amenByName, byDefault] {
                let pushes = deliveries(token)
                #expect(pushes.count == 2, "badge and alert to \(token.prefix(8))")
                #expect(pushes.allSatisfy { $0.authorization?.app == "amen" })
                #expect(pushes.allSatisfy { $0.authorization?.keyID == credentials.apnsKeyID })
                #expect(pushes.allSatisfy { $0.authorization?.issuer == credentials.apnsTeamID })
                #expect(pushes.allSatisfy { $0.headers["apns-topic"] == "com.example.amen" })
                #expect(production.receivedPushes(token: token).count == 2)
            }
            // psalms: the other team's key; its topic selects it, its devices without an environment go to the
            // sandbox host, the one registered for production to the production host.
            let byTopic = deliveries(psalmsByTopic)
            #expect(byTopic.count == 2 && sandbox.receivedPushes(token: psalmsByTopic).count == 2)
            let voip = deliveries(psalmsVoIPProduction)
            #expect(voip.count == 2 && production.receivedPushes(token: psalmsVoIPProduction).count == 2)
            #expect(voip.allSatisfy { $0.headers["apns-topic"] == "org.psalms.app.voip" })
            for push in byTopic + voip {
                #expect(push.authorization?.app == "psalms")
                #expect(push.authorization?.keyID == Self.otherKeyID)
                #expect(push.authorization?.issuer == Self.otherTeamID)
            }
            // FCM: amen's project and service account.
            let android = deliveries(amenAndroid)
            #expect(android.count == 2)
            #expect(
                android.allSatisfy { $0.authorization?.app == "amen" && $0.authorization?.issuer == serviceAccount })
            #expect(
                pipeline.acceptedPayloads(token: amenAndroid).compactMap { $0["event_id"]?.stringValue } == ["m-n1"])
            // Not configured: psalms has no FCM side, and no app is called hymns. Nothing sent, devices kept.
            #expect(deliveries(psalmsAndroid).isEmpty && deliveries(unknownApp).isEmpty)
            let devices = Set(try await pipeline.store.snapshot(user: "u-multi").devices.map(\.token))
            #expect(devices.count == 7, "every device kept")
            #expect(try pipeline.querySQL("SELECT count(*) FROM outbox") == ["0"])
        }
    }
}

/// The configuration a pipeline's worker was given, kept for the test's body.
private final class Built: Sendable {
    let value = Mutex<DeliveryConfiguration?>(nil)
}
