import BadgeModel
import BadgeWire
import Testing

@testable import BadgeCore

@Suite("InboxModel scenarios")
struct InboxModelScenarioTests {
    @Test func scenarioFixturesArePresent() {
        #expect(Fixtures.names(in: "scenarios").count >= 7)
    }

    /// Runs a scenario file: `{"name","policy","steps":[{"publish":event}|{"expect":{"badges":{token: badge}}}]}`.
    /// The badge a token shows is the badge of the last push planned for it so far.
    @Test(arguments: Fixtures.names(in: "scenarios"))
    func scenario(name: String) throws {
        let root = try JSONValue.parse(try Fixtures.bytes(name, in: "scenarios"))
        let policy = try #require(BadgePolicy(rawValue: root["policy"]?.stringValue ?? "unseen"))
        let steps = try #require(root["steps"]?.arrayValue)
        var model = InboxModel(policy: policy)
        var shown: [String: Int] = [:]
        var lastVersion: [String: Int64] = [:]
        var alertVersions: [String: Set<Int64>] = [:]
        var recipients: Set<String> = []
        let builder = PushPayloadBuilder(defaultAPNsTopic: "com.example.default")
        var expectations = 0

        for (index, step) in steps.enumerated() {
            if let published = step["publish"] {
                let event = try EventDecoder.decode(json: published).get()
                recipients.insert(event.recipient)
                for push in model.apply(event).pushes {
                    shown[push.token] = push.badge
                    // Monotonic per device; alerts for different events never share a version.
                    #expect(push.badgeVersion >= lastVersion[push.token] ?? 0, "step \(index)")
                    lastVersion[push.token] = push.badgeVersion
                    if push.kind.isAlert {
                        #expect(alertVersions[push.token, default: []].insert(push.badgeVersion).inserted)
                    }
                    #expect(builder.build(push).body.count <= PushPayloadBuilder.maxBodyBytes)
                }
            }
            if let badges = step["expect"]?["badges"]?.objectMembers {
                for (token, badge) in badges {
                    expectations += 1
                    #expect(
                        shown[token].map(Int64.init) == badge.int64Value,
                        "\(name) step \(index): token \(token.prefix(8))…")
                }
            }
        }
        #expect(expectations > 0)
        // After the pipeline goes quiet, each active device's last push carries its user's current badge.
        for user in recipients {
            for device in model.activeDevices(of: user) {
                #expect(shown[device.token] == model.badge(of: user))
            }
        }
    }
}
