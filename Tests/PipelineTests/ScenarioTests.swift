import BadgeCore
import BadgeWire
import Foundation
import Testing

/// Every contract scenario, end to end: real broker, in-process worker, real sink over HTTP, on both databases.
@Suite("Contract scenarios end to end", .serialized, .timeLimit(.minutes(5)))
struct ScenarioTests {
    static let scenarioNames: [String] = {
        let directory = Bundle.module.url(forResource: "scenarios", withExtension: nil, subdirectory: "Fixtures")!
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasSuffix(".json") }.sorted()
    }()

    static func load(_ name: String) throws -> JSONValue {
        let url = Bundle.module.url(forResource: "scenarios", withExtension: nil, subdirectory: "Fixtures")!
            .appendingPathComponent(name)
        return try JSONValue.parse(Array(try Data(contentsOf: url)))
    }

    @Test func everyScenarioFileIsPresent() {
        #expect(Self.scenarioNames.count == 7)
    }

    @Test(arguments: Backend.allCases, scenarioNames)
    func scenario(backend: Backend, name: String) async throws {
        let scenario = try Self.load(name)
        let policy = BadgePolicy(rawValue: scenario["policy"]?.stringValue ?? "unseen") ?? .unseen
        let steps = try #require(scenario["steps"]?.arrayValue)
        try await Pipeline.with(backend: backend, policy: policy) { pipeline in
            var tokens: Set<String> = []
            for (index, step) in steps.enumerated() {
                if let event = step["publish"] {
                    try await pipeline.publish(event)
                    if let token = event["device"]?["token"]?.stringValue { tokens.insert(token) }
                }
                if let expected = step["expect"]?["badges"]?.objectMembers {
                    try await pipeline.waitUntilQuiet()
                    for (token, badge) in expected {
                        #expect(
                            pipeline.lastBadge(token: token) == badge.int64Value.map(Int.init),
                            "step \(index): last badge on \(token.prefix(8))…")
                    }
                }
            }
            // badge_version strictly increases on every device.
            for token in tokens {
                let versions = pipeline.acceptedPayloads(token: token).compactMap { $0["badge_version"]?.int64Value }
                #expect(zip(versions, versions.dropFirst()).allSatisfy { $0 < $1 }, "versions on \(token): \(versions)")
            }
        }
    }
}
