import AsyncHTTPClient
import BadgeCore
import BadgeDelivery
import BadgeSink
@_spi(Testing) import BadgeStore
import BadgeWire
import Logging
import ServiceLifecycle
import SinkTestSupport
import Testing

@testable import BadgeWorker

/// A fresh store, a sink on an ephemeral port, and a way to make the delivery rounds of some store that sends there.
func withDeliveryFixture(
    _ backend: Backend,
    _ body:
        @Sendable (any SQLBackedStore, SinkState, @Sendable (any PipelineStore) -> DeliveryRounds) async throws ->
        Void
) async throws {
    let logger = {
        var logger = Logger(label: "lease-fencing-test")
        logger.logLevel = .warning
        return logger
    }()
    let sink = try TestSink(seed: 7, logger: logger)
    let databaseURL = try backend.freshURL()
    let store = try StoreFactory.make(url: databaseURL, logger: logger)
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await sink.run() }
        group.addTask { await store.run() }
        let port = try await sink.port()
        let delivery = DeliveryConfiguration(
            apnsBaseURL: "http://127.0.0.1:\(port)", fcmBaseURL: "http://127.0.0.1:\(port)")
        let http = try ProviderClients(configuration: delivery)
        let sender = PushSender(configuration: delivery, clients: http, logger: logger)
        let result: Result<Void, any Error>
        do {
            try await store.migrate()
            result = .success(
                try await body(store, sink.state) { on in
                    DeliveryRounds(
                        store: on, sender: sender,
                        builder: PushPayloadBuilder(defaultAPNsTopic: "com.example.app"), concurrency: 4,
                        policy: .unseen, logger: logger)
                })
        } catch {
            result = .failure(error)
        }
        try? await store.close()
        await sink.shutDown()
        try await group.waitForAll()
        try await http.shutdown()
        backend.drop(databaseURL)
        try result.get()
    }
}

/// A device registration of `token` for u-alice, then a follow: the registration's badge-only push and the
/// follow's alert.
func deliveryFixtureEvents(token: String) -> [Event] {
    let time = Timestamp.parse("2026-11-21T10:00:00Z")!
    return [
        Event(
            id: "d1", type: .deviceRegistered, recipient: "u-alice", occurredAt: time,
            device: DeviceInfo(token: token, provider: .apns, topic: "com.example.app", environment: .production)),
        Event(
            id: "n1", type: .follow, recipient: "u-alice", occurredAt: time.adding(microseconds: 1_000_000),
            actor: EventActor(id: "u-bob", name: "Bob Stone", username: "bob")),
    ]
}
