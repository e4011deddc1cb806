import BadgeCore
import BadgeDelivery
import Foundation
import Logging

// Pushes per second through the worker's own sender (PushSender over ProviderClients) to one URL, with a bounded
// number in flight: APNs badge-only pushes to distinct tokens. `scripts/bench --mode push` runs it against the
// sink in TLS mode over one HTTP/2 connection, several, and HTTP/1.1.
//
//   push-bench --url https://127.0.0.1:8788 --ca-file sink.crt [--count 20000] [--concurrency 100]
//              [--connections 1] [--http1]

var arguments = CommandLine.arguments.dropFirst()
var options: [String: String] = [:]
var http1 = false
while let name = arguments.popFirst() {
    if name == "--http1" {
        http1 = true
    } else if let value = arguments.popFirst() {
        options[String(name.drop(while: { $0 == "-" }))] = value
    }
}
guard let url = options["url"] else {
    FileHandle.standardError.write(Data("push-bench: --url is required\n".utf8))
    exit(2)
}
let count = Int(options["count"] ?? "") ?? 20000
let concurrency = Int(options["concurrency"] ?? "") ?? 100
let connections = Int(options["connections"] ?? "") ?? 1

var logger = Logger(label: "push-bench")
logger.logLevel = .error
var configuration = DeliveryConfiguration(
    apnsBaseURL: url, fcmBaseURL: url, trustedRootsFile: options["ca-file"], clientsPerProvider: connections)
configuration.http1Only = http1
let clients = try ProviderClients(configuration: configuration, http1ConnectionsPerHost: concurrency)
let sender = PushSender(configuration: configuration, clients: clients, logger: logger)
let builder = PushPayloadBuilder(defaultAPNsTopic: "com.example.bench")

func push(_ index: Int) -> PushRequest {
    builder.build(
        PlannedPush(
            recipient: "u-\(index)", eventID: "bench-\(index)", eventType: .notificationRead,
            token: String(format: "%064x", index), provider: .apns, topic: nil, environment: nil, kind: .badgeOnly,
            counts: Counts(unreadNotifications: 1, unseenNotifications: 1, unreadMessages: 0), badge: 1,
            badgeVersion: 1, previews: true))
}

// Warm up: connections and TLS handshakes are not what is measured.
_ = try await sender.send(push(-1))
let clock = ContinuousClock()
let start = clock.now
var accepted = 0
var failures = 0
await withTaskGroup(of: Bool.self) { group in
    var next = 0
    while next < min(concurrency, count) {
        let request = push(next)
        group.addTask { (try? await sender.send(request)) == .accepted }
        next += 1
    }
    for await ok in group {
        if ok { accepted += 1 } else { failures += 1 }
        if next < count {
            let request = push(next)
            group.addTask { (try? await sender.send(request)) == .accepted }
            next += 1
        }
    }
}
let elapsed = clock.now - start
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
print(
    String(
        format: "%@, %d in flight: %d pushes in %.2f s = %.0f pushes/s (%d failed)",
        http1
            ? "HTTP/1.1 (up to \(concurrency) connections)"
            : "HTTP/2 (ALPN) over \(connections) connection\(connections == 1 ? "" : "s")",
        concurrency, accepted, seconds, Double(accepted) / seconds, failures))
try await clients.shutdown()
