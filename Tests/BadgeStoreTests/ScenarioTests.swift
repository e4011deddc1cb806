import BadgeCore
import BadgeModel
import BadgeWire
import Testing

@_spi(Testing) @testable import BadgeStore

/// The contract's scenarios (`Fixtures/*.json`), on both backends.
@Suite("Contract scenarios")
struct ScenarioTests {
    /// How the publish steps are grouped into `apply` calls.
    enum Batching: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Each publish step is its own batch.
        case perStep
        /// All publish steps up to an `expect` step form one batch (the whole file when it has one expect).
        case perSegment

        var testDescription: String { rawValue }
    }

    @Test func fixturesArePresent() {
        #expect(Fixtures.names().count >= 7)
    }

    /// Applies a scenario `{"policy","steps":[{"publish":event}|{"expect":{"badges":{token: badge}}}]}`; the
    /// badge a token shows is the badge of its last outbox push, read back from the outbox.
    @Test(arguments: Fixtures.names(), Backend.allCases)
    func scenario(name: String, backend: Backend) async throws {
        for batching in Batching.allCases {
            try await run(name: name, backend: backend, batching: batching)
        }
    }

    private func run(name: String, backend: Backend, batching: Batching) async throws {
        let root = try JSONValue.parse(try Fixtures.bytes(name))
        let policy = try #require(BadgePolicy(rawValue: root["policy"]?.stringValue ?? "unseen"))
        let steps = try #require(root["steps"]?.arrayValue)
        try await withStore(backend) { store in
            var model = InboxModel(policy: policy)
            var shown: [String: Int] = [:]
            var pending: [Event] = []
            var expectations = 0
            var recipients: Set<String> = []

            func flush() async throws {
                guard !pending.isEmpty else { return }
                let batches = batching == .perStep ? pending.map { [$0] } : [pending]
                for batch in batches {
                    let applied = try await store.apply(batch, policy: policy)
                    #expect(pushes(applied) == modelPushes(&model, batch), "\(name) [\(batching)]")
                }
                pending = []
                let outbox = try await store.pendingPushes(limit: 10_000)
                for row in outbox {
                    shown[row.push.token] = row.push.badge
                }
                try await store.recordDeliveries(DeliveryRecord(sent: outbox.map(\.id)))
            }

            for (index, step) in steps.enumerated() {
                if let published = step["publish"] {
                    let event = try EventDecoder.decode(json: published).get()
                    recipients.insert(event.recipient)
                    pending.append(event)
                }
                if let badges = step["expect"]?["badges"]?.objectMembers {
                    try await flush()
                    for (token, badge) in badges {
                        expectations += 1
                        #expect(
                            shown[token].map(Int64.init) == badge.int64Value,
                            "\(name) [\(batching)] step \(index): token \(token.prefix(8))…")
                    }
                }
            }
            try await flush()
            #expect(expectations > 0)
            for user in recipients.sorted() {
                let snapshot = try await store.snapshot(user: user)
                expectMatches(snapshot, model, "\(name) [\(batching)]")
                for device in snapshot.devices {
                    #expect(shown[device.token] == snapshot.badge(policy: policy))
                }
            }
        }
    }
}
