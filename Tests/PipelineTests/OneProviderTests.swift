import BadgeCore
import BadgeDelivery
import BadgeSink
@_spi(Testing) import BadgeStore
import BadgeWire
import Foundation
import ProviderAuth
import TestCredentials
import Testing

/// Deployments of one provider: an iOS-only worker (APNs credentials, no FCM settings at all) and an Android-only
/// worker (an FCM service account, no APNs settings), each against the sink in TLS mode verifying its credentials.
/// A user with devices of both providers gets every push on the configured provider's device; the other device's
/// pushes are refused unsent (`provider_not_configured`), nothing waits in the outbox for them, and the device is
/// kept: a worker that configures its provider later serves it from the same database.
@Suite("One provider", .serialized, .timeLimit(.minutes(5)))
struct OneProviderTests {
    private static func token(_ seed: Int) -> String {
        String(repeating: String(format: "%08x", seed), count: 8)
    }

    private static func tlsSink(_ credentials: TestCredentials) -> SinkConfiguration {
        SinkConfiguration(
            host: "127.0.0.1", port: 0, tlsCertificateFile: credentials.certificateFile,
            tlsKeyFile: credentials.certificateKeyFile,
            apnsKeyFiles: [credentials.apnsKeyID: credentials.apnsPublicKeyFile], apnsTeamID: credentials.apnsTeamID,
            fcmPublicKeyFile: credentials.serviceAccountPublicKeyFile)
    }

    private static func apnsKey(_ credentials: TestCredentials) throws -> APNsSigningKey {
        try APNsSigningKey(file: credentials.apnsKeyFile, keyID: credentials.apnsKeyID, teamID: credentials.apnsTeamID)
    }

    /// The outbox rows and refused rows left in the pipeline's database.
    private static func leftovers(_ pipeline: Pipeline) throws -> (outbox: String?, refused: String?) {
        (
            try pipeline.querySQL("SELECT count(*) FROM outbox").first,
            try pipeline.querySQL("SELECT count(*) FROM refused_pushes").first
        )
    }

    /// Every push the sink recorded went to `token` (none to the other provider), over HTTP/2, answered 200, with a
    /// credential the sink verified as `issuer`'s; the alerts accepted for `token` are the events `alerts`.
    ///
    /// Waits up to 30 s for `alerts.count` accepted pushes to `token` first: `waitUntilQuiet` counts the messages
    /// ready in the queues, and those a worker holds are not, so it can find the pipeline quiet while the first push
    /// of a fresh TLS connection (a handshake, a signed token) is still on its way.
    private static func expectOnlyVerifiedPushes(
        _ pipeline: Pipeline, to token: String, signedBy issuer: String, alerts: [String]
    ) async throws {
        _ = try await pipeline.sink.wait(tokens: [token], until: .now + .seconds(30)) {
            let count = pipeline.acceptedPayloads(token: token).count
            return (count, count >= alerts.count)
        }
        let deliveries = pipeline.sink.receivedPushes()
        #expect(!deliveries.isEmpty && deliveries.allSatisfy { $0.token == token }, "a push went to the other provider")
        #expect(
            deliveries.allSatisfy {
                $0.status == 200 && $0.httpVersion == "2" && $0.authorization?.verified == true
                    && $0.authorization?.issuer == issuer
            })
        #expect(pipeline.acceptedPayloads(token: token).compactMap { $0["event_id"]?.stringValue } == alerts)
    }

    /// Registers `user`'s iPhone and Android phone, then sends them two alerts; returns when all is quiet.
    private static func registerBothAndAlert(
        _ pipeline: Pipeline, user: String, ios: String, android: String
    )
        async throws
    {
        try await pipeline.publish(ProviderTests.register(user, token: ios, id: "\(user)-d1"))
        try await pipeline.publish(ProviderTests.register(user, token: android, id: "\(user)-d2", provider: "fcm"))
        try await pipeline.publish(ProviderTests.follow(user, id: "\(user)-n1"))
        try await pipeline.publish(ProviderTests.follow(user, id: "\(user)-n2", second: 2))
        try await pipeline.waitUntilQuiet()
    }

    @Test func anAPNsOnlyWorkerDeliversToIPhonesAndRefusesAndroidPushesKeepingTheDevice() async throws {
        let credentials = try TestCredentials()
        defer { credentials.remove() }
        let database = try Backend.sqlite.freshURL()
        defer { Backend.sqlite.drop(database) }
        let (ios, android) = (Self.token(11), "fcm-" + Self.token(12))
        try await Pipeline.with(
            backend: .sqlite, database: database, sinks: [Self.tlsSink(credentials)],
            delivery: { ports in
                // No FCM setting at all: the FCM URL left at Google's host, no service account.
                DeliveryConfiguration(
                    apnsBaseURL: "https://127.0.0.1:\(ports[0])", fcmBaseURL: "https://fcm.googleapis.com",
                    apnsCredentials: .token(try Self.apnsKey(credentials)), providers: [.apns],
                    trustedRootsFile: credentials.certificateFile, initialBackoff: .milliseconds(5),
                    maxBackoff: .milliseconds(100))
            }
        ) { pipeline in
            try await Self.registerBothAndAlert(pipeline, user: "u-both", ios: ios, android: android)
            try await Self.expectOnlyVerifiedPushes(
                pipeline, to: ios, signedBy: credentials.apnsTeamID, alerts: ["u-both-n1", "u-both-n2"])
            let devices = try await pipeline.store.snapshot(user: "u-both").devices.map(\.token)
            #expect(Set(devices) == [ios, android], "the Android device is kept")
            let (outbox, refused) = try Self.leftovers(pipeline)
            #expect(outbox == "0", "no push waits for a provider that is not configured")
            #expect(refused == "0", "a readable push refused for its provider is not kept in refused_pushes")
        }
        // FCM configured later, on the same database: the kept device is served.
        try await Pipeline.with(
            backend: .sqlite, database: database, sinks: [Self.tlsSink(credentials)],
            delivery: { ports in
                let file = try credentials.writeServiceAccount(tokenURI: "https://127.0.0.1:\(ports[0])/token")
                return DeliveryConfiguration(
                    apnsBaseURL: "https://127.0.0.1:\(ports[0])", fcmBaseURL: "https://127.0.0.1:\(ports[0])",
                    apnsCredentials: .token(try Self.apnsKey(credentials)),
                    fcmCredentials: try ServiceAccount(file: file), trustedRootsFile: credentials.certificateFile,
                    initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(100))
            }
        ) { pipeline in
            try await pipeline.publish(ProviderTests.follow("u-both", id: "u-both-n3", second: 3))
            try await pipeline.waitUntilQuiet()
            let alerts = pipeline.acceptedPayloads(token: android).compactMap { $0["event_id"]?.stringValue }
            #expect(alerts == ["u-both-n3"])
            #expect(pipeline.lastBadge(token: android) == 3, "with the current badge")
            #expect(pipeline.sink.receivedPushes(token: android).allSatisfy { $0.authorization?.verified == true })
        }
    }

    @Test func anFCMOnlyWorkerDeliversToAndroidPhonesAndRefusesIPhonePushesKeepingTheDevice() async throws {
        let credentials = try TestCredentials()
        defer { credentials.remove() }
        let (ios, android) = (Self.token(21), "fcm-" + Self.token(22))
        try await Pipeline.with(
            backend: .sqlite, sinks: [Self.tlsSink(credentials)],
            delivery: { ports in
                // No APNs setting at all: the APNs URLs left at Apple's hosts, no key.
                let file = try credentials.writeServiceAccount(tokenURI: "https://127.0.0.1:\(ports[0])/token")
                return DeliveryConfiguration(
                    apnsBaseURL: DeliveryConfiguration.appleAPNsURL,
                    apnsSandboxBaseURL: DeliveryConfiguration.appleAPNsSandboxURL,
                    fcmBaseURL: "https://127.0.0.1:\(ports[0])", fcmCredentials: try ServiceAccount(file: file),
                    providers: [.fcm], trustedRootsFile: credentials.certificateFile,
                    initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(100))
            }
        ) { pipeline in
            try await Self.registerBothAndAlert(pipeline, user: "u-droid", ios: ios, android: android)
            try await Self.expectOnlyVerifiedPushes(
                pipeline, to: android, signedBy: "pusher@\(credentials.fcmProject).iam.gserviceaccount.com",
                alerts: ["u-droid-n1", "u-droid-n2"])
            let devices = try await pipeline.store.snapshot(user: "u-droid").devices.map(\.token)
            #expect(Set(devices) == [ios, android], "the iPhone is kept")
            let (outbox, refused) = try Self.leftovers(pipeline)
            #expect(outbox == "0" && refused == "0")
        }
    }
}
