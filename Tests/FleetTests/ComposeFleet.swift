import BadgeCore
import BadgeSink
import BadgeWire
import Foundation

/// A fleet `scripts/compose-test` started with the top-level `docker-compose.yml` (with `deploy/cluster.yml`: a
/// three-node broker cluster), seen from the host: the broker, database and sink through their published ports,
/// the containers through the docker CLI.
///
/// Configured by `scripts/compose-test` through the environment; the compose tests are skipped without it.
struct ComposeFleet {
    /// The compose project (containers carry it in the `com.docker.compose.project` label).
    let project: String
    /// One URL, or with `deploy/cluster.yml` the three nodes' URLs separated by commas.
    let amqpURL: String
    let databaseURL: String
    let sinkURL: String
    /// The contract scenario `scripts/compose-test` published through `docker compose run --rm publish`.
    let scenarioPath: String?

    static var isConfigured: Bool { ProcessInfo.processInfo.environment["BADGEPIPE_COMPOSE_PROJECT"] != nil }

    /// Whether the fleet runs on the three-node cluster of `deploy/cluster.yml` (its broker URL lists the nodes).
    static var isCluster: Bool {
        ProcessInfo.processInfo.environment["BADGEPIPE_COMPOSE_AMQP_URL"]?.contains(",") ?? false
    }

    /// The compose services running a broker node: `rabbitmq`, and on the cluster `rabbitmq-2` and `rabbitmq-3`.
    var brokerServices: [String] {
        amqpURL.contains(",") ? ["rabbitmq", "rabbitmq-2", "rabbitmq-3"] : ["rabbitmq"]
    }

    /// The compose service of a broker node, from its node name (`rabbit@rabbitmq-2` → `rabbitmq-2`): the node name
    /// follows the hostname, which is the service's name.
    static func service(ofNode node: String) -> String {
        String(node.split(separator: "@").last ?? Substring(node))
    }

    static func fromEnvironment() throws -> ComposeFleet {
        let environment = ProcessInfo.processInfo.environment
        func value(_ name: String) throws -> String {
            guard let value = environment[name], !value.isEmpty else { throw FleetError("\(name) is not set") }
            return value
        }
        return ComposeFleet(
            project: try value("BADGEPIPE_COMPOSE_PROJECT"), amqpURL: try value("BADGEPIPE_COMPOSE_AMQP_URL"),
            databaseURL: try value("BADGEPIPE_COMPOSE_DATABASE_URL"), sinkURL: try value("BADGEPIPE_COMPOSE_SINK_URL"),
            scenarioPath: environment["BADGEPIPE_COMPOSE_SCENARIO"])
    }

    /// The scenario's events, as steps the reference model can replay.
    func scenarioSteps() throws -> [FleetScript.Step] {
        guard let scenarioPath else { return [] }
        let json = try JSONValue.parse(Array(try Data(contentsOf: URL(fileURLWithPath: scenarioPath))))
        return try (json["steps"]?.arrayValue ?? []).compactMap { $0["publish"] }.map {
            FleetScript.Step(event: try EventDecoder.decode(json: $0).get(), isDuplicate: false)
        }
    }

    /// Ids of the running containers of one compose service.
    func containers(of service: String) async throws -> [String] {
        let output = try await run(
            "docker",
            [
                "ps", "-q", "--no-trunc", "--filter", "label=com.docker.compose.project=\(project)",
                "--filter", "label=com.docker.compose.service=\(service)",
            ])
        return output.split(separator: "\n").map(String.init).sorted()
    }

    /// Kills a container with SIGKILL (`docker kill`).
    func kill(_ container: String) async throws {
        _ = try await run("docker", ["kill", container])
    }

    /// Live partition leases: owner → partitions.
    func leases() async throws -> [String: [Int]] {
        let query =
            "select owner, partition_id from partition_leases where owner is not null and expires_at > "
            + "extract(epoch from clock_timestamp()) * 1000000 order by partition_id"
        let output = try await run("psql", [databaseURL, "-AtF", " ", "-c", query])
        var owners: [String: [Int]] = [:]
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 2, let partition = Int(fields[1]) else { continue }
            owners[String(fields[0]), default: []].append(partition)
        }
        return owners
    }

    /// How many times the running workers logged leaving a partition whose lease they lost ("lease lost, leaving the
    /// partition", `PartitionLauncher`): a worker whose lease rounds missed the database for a TTL (its container, or
    /// the whole machine, stalled). The partition's new owner then sends again what the worker had sent but not
    /// recorded, with the same `apns-id` (contract guarantee 2).
    func leasesLost() async throws -> Int {
        var total = 0
        let script = "docker logs \"$0\" 2>&1 | grep -c 'lease lost, leaving the partition' || true"
        for container in try await containers(of: "worker") {
            let count = try await run("sh", ["-c", script, container])
            total += Int(count.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
        return total
    }

    /// A running broker container (on the cluster, any node's).
    func anyBroker() async throws -> String {
        for service in brokerServices {
            if let container = try await containers(of: service).first { return container }
        }
        throw FleetError("no broker container runs")
    }

    /// `rabbitmqctl list_queues -q name COLUMN` inside a running broker container: the column of each queue, by name.
    func queues(_ column: String) async throws -> [String: String] {
        let broker = try await anyBroker()
        let output = try await run("docker", ["exec", broker, "rabbitmqctl", "list_queues", "-q", "name", column])
        var values: [String: String] = [:]
        for line in output.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count == 2 else { continue }
            values[String(fields[0])] = String(fields[1])
        }
        return values
    }

    /// Ready plus unacked messages in the fleet's partition queues, from `rabbitmqctl` inside a broker container.
    func messagesInQueues() async throws -> Int {
        try await queues("messages").filter { $0.key.hasPrefix("badgepipe.events.") }.values.reduce(0) {
            $0 + (Int($1) ?? 0)
        }
    }

    /// Messages in the dead-letter queue (`badgepipe.dead`).
    func deadLettered() async throws -> Int {
        Int(try await queues("messages")["badgepipe.dead"] ?? "0") ?? 0
    }

    /// How many partition queues each broker node leads, by node name (`rabbit@rabbitmq-2`).
    func partitionQueuesLed() async throws -> [String: Int] {
        var led: [String: Int] = [:]
        for (queue, leader) in try await queues("leader") where queue.hasPrefix("badgepipe.events.") {
            led[leader, default: 0] += 1
        }
        return led
    }

    /// Rows in the outbox (pushes planned and not yet recorded as sent).
    func outboxRows() async throws -> Int {
        let output = try await run("psql", [databaseURL, "-Atc", "select count(*) from outbox"])
        guard let count = Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw FleetError("unexpected outbox count \(output)")
        }
        return count
    }

    /// Every push the sink recorded, from `GET /deliveries`.
    func deliveries() async throws -> [ReceivedPush] {
        let output = try await run("curl", ["-sSf", "\(sinkURL)/deliveries"], timeout: .seconds(120))
        let json = try JSONValue.parse(Array(output.utf8))
        return try (json["deliveries"]?.arrayValue ?? []).map { item in
            guard let seq = item["seq"]?.int64Value, let token = item["token"]?.stringValue,
                let provider = item["provider"]?.stringValue.flatMap(BadgeWire.PushProvider.init(rawValue:)),
                let status = item["status"]?.int64Value,
                let receivedAt = item["received_at"]?.stringValue.flatMap(Timestamp.parse)
            else { throw FleetError("unexpected delivery \(item.serializedString().prefix(200))") }
            var headers: [String: String] = [:]
            if case .object(let members) = item["headers"] ?? .null {
                for member in members { headers[member.key] = member.value.stringValue }
            }
            let payload = item["payload"] ?? .null
            return ReceivedPush(
                seq: Int(seq), provider: provider, token: token, headers: headers, body: payload.serialized(),
                bodyIsJSON: true, status: Int(status), reason: item["reason"]?.stringValue,
                receivedAt: Date(timeIntervalSince1970: Double(receivedAt.microsecondsSinceEpoch) / 1_000_000))
        }
    }

    /// Until the partition queues and the outbox are empty and the sink has been quiet for 3 s.
    func waitUntilQuiet(timeout: Duration) async throws {
        try await FleetHarness.waitUntilQuiet(timeout: timeout, what: "the compose fleet") {
            try await messagesInQueues() + outboxRows()
        } received: {
            try await deliveryCount()
        }
    }

    /// How many pushes the sink has recorded (`GET /stats`).
    func deliveryCount() async throws -> Int {
        let json = try JSONValue.parse(Array(try await run("curl", ["-sSf", "\(sinkURL)/stats"]).utf8))
        guard let total = json["received"]?.int64Value else { throw FleetError("unexpected stats \(json)") }
        return Int(total)
    }

    /// Runs a command found on PATH and returns its standard output; throws when it fails or outlives `timeout`.
    func run(_ command: String, _ arguments: [String], timeout: Duration = .seconds(60)) async throws -> String {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(
            "compose-\(UInt64.random(in: 0...UInt64.max)).out")
        defer { try? FileManager.default.removeItem(at: output) }
        let quoted = ([command] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        try await FleetHarness.shell(
            "sh", ["-c", quoted.joined(separator: " ") + " > '\(output.path)'"], timeout: timeout)
        return (try? String(contentsOf: output, encoding: .utf8)) ?? ""
    }
}
