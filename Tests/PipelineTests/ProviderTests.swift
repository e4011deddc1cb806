import BadgeCore
import BadgeDelivery
import BadgeSink
@_spi(Testing) import BadgeStore
import BadgeWire
import Foundation
import Logging
import ProviderAuth
import TestCredentials
import Testing

/// The worker against the sink in TLS mode with keys made at test time: APNs over HTTP/2 with provider tokens the
/// sink verifies, sandbox and production devices on their own hosts, an expired token re-signed once, FCM with
/// access tokens fetched from the sink's `/token` and refreshed before they expire; and every provider answer
/// class doing what it should to the push and the device.
@Suite("Real providers", .serialized, .timeLimit(.minutes(5)))
struct ProviderTests {
    static func register(
        _ user: String, token: String, id: String, provider: String = "apns", environment: String? = nil
    ) -> JSONValue {
        var device: [(key: String, value: JSONValue)] = [
            (key: "token", value: .string(token)), (key: "provider", value: .string(provider)),
        ]
        if provider == "apns" { device.append((key: "topic", value: "com.example.test")) }
        if let environment { device.append((key: "environment", value: .string(environment))) }
        return [
            "id": .string(id), "type": "device_registered", "recipient": .string(user),
            "occurred_at": "2026-11-21T09:00:00Z", "device": .object(device),
        ]
    }

    static func follow(_ user: String, id: String, second: Int = 1) -> JSONValue {
        RobustnessTests.follow(user, id: id, second: second)
    }

    private static func token(_ seed: Int) -> String {
        String(repeating: String(format: "%08x", seed), count: 8)
    }

    private static func tlsSink(_ credentials: TestCredentials, tokenLifetime: Int = 3600) -> SinkConfiguration {
        SinkConfiguration(
            host: "127.0.0.1", port: 0, tlsCertificateFile: credentials.certificateFile,
            tlsKeyFile: credentials.certificateKeyFile,
            apnsKeyFiles: [credentials.apnsKeyID: credentials.apnsPublicKeyFile], apnsTeamID: credentials.apnsTeamID,
            fcmPublicKeyFile: credentials.serviceAccountPublicKeyFile, fcmTokenLifetime: tokenLifetime)
    }

    @Test func apnsGoesOverHTTP2WithVerifiedTokensEachEnvironmentToItsHostAndAnExpiredTokenIsReSignedOnce()
        async throws
    {
        let credentials = try TestCredentials()
        defer { credentials.remove() }
        let key = try APNsSigningKey(
            file: credentials.apnsKeyFile, keyID: credentials.apnsKeyID, teamID: credentials.apnsTeamID)
        try await Pipeline.with(
            backend: .sqlite, sinks: [Self.tlsSink(credentials), Self.tlsSink(credentials)],
            delivery: { ports in
                DeliveryConfiguration(
                    apnsBaseURL: "https://127.0.0.1:\(ports[0])", apnsSandboxBaseURL: "https://localhost:\(ports[1])",
                    fcmBaseURL: "https://127.0.0.1:\(ports[0])", apnsCredentials: .token(key),
                    trustedRootsFile: credentials.certificateFile, initialBackoff: .milliseconds(5),
                    maxBackoff: .milliseconds(100))
            }
        ) { pipeline in
            let (production, sandbox) = (pipeline.sinks[0], pipeline.sinks[1])
            let (prodToken, sandboxToken) = (Self.token(1), Self.token(2))
            try await pipeline.publish(Self.register("u-prod", token: prodToken, id: "p-d1", environment: "production"))
            try await pipeline.publish(Self.register("u-sand", token: sandboxToken, id: "s-d1", environment: "sandbox"))
            try await pipeline.waitUntilQuiet()
            // The registrations' pushes were signed with a token issued this second; a token signed anew below is
            // issued in a later one, so the sink's record of each token's `iat` tells them apart.
            try #require(!production.receivedPushes().isEmpty, "the registration's badge push signed a token")
            try await Task.sleep(for: .milliseconds(1100))
            // Apple calls the token expired once: the worker signs a new one and sends again at once.
            production.addFault(try Fault(token: prodToken, status: 403, reason: "ExpiredProviderToken", times: 1))
            try await pipeline.publish(Self.follow("u-prod", id: "p-n1"))
            try await pipeline.publish(Self.follow("u-sand", id: "s-n1"))
            try await pipeline.waitUntilQuiet()

            let prod = production.receivedPushes()
            let sand = sandbox.receivedPushes()
            #expect(!prod.isEmpty && prod.allSatisfy { $0.token == prodToken }, "production devices only")
            #expect(!sand.isEmpty && sand.allSatisfy { $0.token == sandboxToken }, "sandbox devices only")
            for delivery in prod + sand {
                #expect(delivery.httpVersion == "2")
                #expect(delivery.headers["authorization"] == nil, "the sink keeps no token")
                #expect(delivery.authorization?.scheme == "bearer")
                #expect(delivery.authorization?.keyID == credentials.apnsKeyID)
                #expect(delivery.authorization?.issuer == credentials.apnsTeamID)
                #expect(delivery.headers["apns-topic"] == "com.example.test")
                #expect(
                    delivery.headers["apns-expiration"].flatMap { Int64($0) } ?? 0 > Int64(Date().timeIntervalSince1970)
                )
            }
            #expect(sand.allSatisfy { $0.status == 200 }, "every sandbox push carried a valid token")
            #expect((prod + sand).allSatisfy { $0.authorization?.verified == true }, "every token verified")
            #expect((prod + sand).allSatisfy { $0.headers["apns-push-type"] == "alert" })
            let alerts = prod.filter { $0.headers["apns-collapse-id"] == nil }
            #expect(alerts.map(\.status) == [403, 200], "refused once as expired, then accepted")
            #expect(
                alerts.map { $0.headers["apns-id"] }.count == 2
                    && alerts[0].headers["apns-id"] == alerts[1].headers["apns-id"])
            // Re-signed: the retry's token was issued after the refused one.
            let issued = alerts.compactMap { $0.authorization?.issuedAt }
            #expect(issued.count == 2 && Set(issued).count == 2 && issued == issued.sorted(), "\(issued)")
            #expect(alerts.map { $0.headers["apns-priority"] } == ["10", "10"])
            let badgeOnly = (prod + sand).filter { $0.headers["apns-collapse-id"] == "badge" }
            #expect(!badgeOnly.isEmpty && badgeOnly.allSatisfy { $0.headers["apns-priority"] == "5" })
            let snapshot = try await pipeline.store.snapshot(user: "u-prod")
            #expect(snapshot.devices.map(\.token) == [prodToken], "the device stays active")
        }
    }

    @Test func apnsCertificateAuthPresentsTheClientCertificateAndSendsNoToken() async throws {
        let credentials = try TestCredentials()
        defer { credentials.remove() }
        let sink = SinkConfiguration(
            host: "127.0.0.1", port: 0, tlsCertificateFile: credentials.certificateFile,
            tlsKeyFile: credentials.certificateKeyFile, tlsClientCAFile: credentials.clientCertificateFile)
        try await Pipeline.with(
            backend: .sqlite, sinks: [sink],
            delivery: { ports in
                DeliveryConfiguration(
                    apnsBaseURL: "https://127.0.0.1:\(ports[0])", fcmBaseURL: "https://127.0.0.1:\(ports[0])",
                    apnsCredentials: .certificate(
                        chainFile: credentials.clientCertificateFile, keyFile: credentials.clientKeyFile),
                    trustedRootsFile: credentials.certificateFile, initialBackoff: .milliseconds(5),
                    maxBackoff: .milliseconds(100))
            }
        ) { pipeline in
            let token = Self.token(4)
            try await pipeline.publish(Self.register("u-cert", token: token, id: "c-d1"))
            try await pipeline.publish(Self.follow("u-cert", id: "c-n1"))
            try await pipeline.waitUntilQuiet()
            let deliveries = pipeline.sink.receivedPushes(token: token)
            let alerts = pipeline.acceptedPayloads(token: token).compactMap { $0["event_id"]?.stringValue }
            #expect(alerts == ["c-n1"], "through the mutual TLS handshake")
            #expect(!deliveries.isEmpty && deliveries.allSatisfy { $0.status == 200 && $0.httpVersion == "2" })
            #expect(deliveries.allSatisfy { $0.authorization == nil }, "certificate auth sends no token")

            // Without the client certificate the handshake fails: nothing gets through.
            let anonymous = try ProviderClients(
                configuration: DeliveryConfiguration(
                    apnsBaseURL: pipeline.sinkURLs[0], fcmBaseURL: pipeline.sinkURLs[0],
                    trustedRootsFile: credentials.certificateFile))
            let sender = PushSender(
                configuration: DeliveryConfiguration(
                    apnsBaseURL: pipeline.sinkURLs[0], fcmBaseURL: pipeline.sinkURLs[0],
                    trustedRootsFile: credentials.certificateFile, requestTimeout: .seconds(2)),
                clients: anonymous, logger: Logger(label: "anonymous"))
            let outcome = try await sender.send(
                PushPayloadBuilder(defaultAPNsTopic: "com.example.test").build(
                    PlannedPush(
                        recipient: "u-cert", eventID: "x", eventType: .follow, token: token, provider: .apns,
                        kind: .badgeOnly, counts: Counts(), badge: 0, badgeVersion: 99)))
            try await anonymous.shutdown()
            guard case .retry = outcome else {
                Issue.record("a push without the client certificate got \(outcome)")
                return
            }
            #expect(pipeline.sink.receivedPushes(token: token).count == deliveries.count)
        }
    }

    @Test func fcmPushesCarryAnAccessTokenFetchedFromTheTokenEndpointAndRefreshedBeforeItExpires() async throws {
        let credentials = try TestCredentials()
        defer { credentials.remove() }
        try await Pipeline.with(
            backend: .sqlite, sinks: [Self.tlsSink(credentials, tokenLifetime: 2)],
            delivery: { ports in
                let file = try credentials.writeServiceAccount(tokenURI: "https://127.0.0.1:\(ports[0])/token")
                return DeliveryConfiguration(
                    apnsBaseURL: "https://127.0.0.1:\(ports[0])", fcmBaseURL: "https://127.0.0.1:\(ports[0])",
                    apnsCredentials: .token(
                        try APNsSigningKey(
                            file: credentials.apnsKeyFile, keyID: credentials.apnsKeyID,
                            teamID: credentials.apnsTeamID)),
                    fcmCredentials: try ServiceAccount(file: file), trustedRootsFile: credentials.certificateFile,
                    initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(100))
            }
        ) { pipeline in
            let token = "fcm-" + Self.token(3)
            try await pipeline.publish(Self.register("u-droid", token: token, id: "f-d1", provider: "fcm"))
            try await pipeline.waitUntilQuiet()
            try await pipeline.publish(Self.follow("u-droid", id: "f-n1"))
            try await pipeline.waitUntilQuiet()
            try await Task.sleep(for: .milliseconds(2200))
            try await pipeline.publish(Self.follow("u-droid", id: "f-n2", second: 2))
            try await pipeline.waitUntilQuiet()
            let deliveries = pipeline.sink.receivedPushes(token: token)
            #expect(deliveries.count >= 3)
            #expect(deliveries.allSatisfy { $0.status == 200 }, "never sent with a missing or expired token")
            #expect(deliveries.allSatisfy { $0.httpVersion == "2" })
            // Each access token the sink issued is recorded by when it issued it, never by its text.
            let issued = Set(deliveries.compactMap { $0.authorization?.issuedAt })
            #expect(issued.count >= 2, "the access token was refreshed")
            #expect(
                deliveries.allSatisfy {
                    $0.authorization?.verified == true
                        && $0.authorization?.issuer == "pusher@\(credentials.fcmProject).iam.gserviceaccount.com"
                })
            let alerts = pipeline.acceptedPayloads(token: token).compactMap { $0["event_id"]?.stringValue }
            #expect(alerts == ["f-n1", "f-n2"])
        }
    }

    /// What each class of provider answer does, over plain HTTP (the classification is the same over TLS).
    enum Expected: Sendable {
        /// The device is deactivated: one refused push, nothing more sent to it.
        case tokenDropped
        /// Retried until it goes through (the fault fires twice).
        case retried
        /// Kept and retried (the worker says so loudly) until the configuration is fixed (the fault clears).
        case heldAsConfigurationError
        /// Dropped for good, the device kept: the next push goes out.
        case dropped
    }

    @Test(
        arguments: [
            ("apns", 410, "Unregistered", Expected.tokenDropped), ("apns", 410, "ExpiredToken", .tokenDropped),
            ("apns", 400, "BadDeviceToken", .tokenDropped), ("apns", 400, "DeviceTokenNotForTopic", .tokenDropped),
            ("apns", 429, "TooManyRequests", .retried), ("apns", 500, "InternalServerError", .retried),
            ("apns", 503, "ServiceUnavailable", .retried),
            ("apns", 403, "InvalidProviderToken", .heldAsConfigurationError),
            ("apns", 403, "MissingProviderToken", .heldAsConfigurationError),
            ("apns", 400, "BadTopic", .heldAsConfigurationError),
            ("apns", 400, "TopicDisallowed", .heldAsConfigurationError),
            ("apns", 400, "MissingTopic", .heldAsConfigurationError),
            ("apns", 413, "PayloadTooLarge", .dropped), ("apns", 400, "BadCollapseId", .dropped),
            ("fcm", 404, "UNREGISTERED", .tokenDropped), ("fcm", 403, "SENDER_ID_MISMATCH", .tokenDropped),
            ("fcm", 400, "INVALID_ARGUMENT", .tokenDropped), ("fcm", 429, "QUOTA_EXCEEDED", .retried),
            ("fcm", 503, "UNAVAILABLE", .retried), ("fcm", 500, "INTERNAL", .retried),
            ("fcm", 401, "THIRD_PARTY_AUTH_ERROR", .heldAsConfigurationError),
            ("fcm", 403, "PERMISSION_DENIED", .heldAsConfigurationError),
        ] as [(String, Int, String, Expected)])
    func eachProviderAnswerDoesWhatItShould(
        provider: String, status: Int, reason: String, expected: Expected
    )
        async throws
    {
        try await Pipeline.with(backend: .sqlite) { pipeline in
            let user = "u-\(reason.lowercased())"
            let token = (provider == "fcm" ? "fcm-" : "") + Self.token(status * 100 + reason.count)
            try await pipeline.publish(Self.register(user, token: token, id: "\(reason)-d1", provider: provider))
            try await pipeline.waitUntilQuiet()
            let times = expected == .tokenDropped || expected == .dropped ? 1 : 2
            pipeline.sink.addFault(try Fault(token: token, status: status, reason: reason, times: times))
            try await pipeline.publish(Self.follow(user, id: "\(reason)-n1"))
            try await pipeline.waitUntilQuiet()
            try await pipeline.publish(Self.follow(user, id: "\(reason)-n2", second: 2))
            try await pipeline.waitUntilQuiet()

            let deliveries = pipeline.sink.receivedPushes(token: token)
            let refused = deliveries.filter { $0.status != 200 }
            let alerts = pipeline.acceptedPayloads(token: token).compactMap { $0["event_id"]?.stringValue }
            let devices = try await pipeline.store.snapshot(user: user).devices.map(\.token)
            switch expected {
            case .tokenDropped:
                #expect(refused.count == 1)
                #expect(deliveries.last?.status != 200, "nothing more was sent to the dropped token")
                #expect(devices.isEmpty)
            case .retried, .heldAsConfigurationError:
                #expect(refused.count == 2, "refused twice, then tried again")
                #expect(alerts == ["\(reason)-n1", "\(reason)-n2"], "every alert delivered once, in order")
                #expect(devices == [token])
            case .dropped:
                #expect(refused.count == 1)
                #expect(alerts == ["\(reason)-n2"], "the refused alert is dropped, the next one goes")
                #expect(devices == [token])
            }
        }
    }
}
