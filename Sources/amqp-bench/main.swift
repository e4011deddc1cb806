// Measures the AMQP client against a real broker: confirmed publishes per second, then consumed+acked messages per
// second. Run with a release build:
//
//     swift run -c release amqp-bench [--count N] [--window W] [--prefetch P] [--ack-every K] [--url URL]
//
// Figures go to stdout; nothing here is asserted.
import AMQPClient
import Foundation

struct Options {
    var url = ProcessInfo.processInfo.environment["BADGEPIPE_AMQP_URL"] ?? "amqp://guest:guest@127.0.0.1:5672/%2F"
    var count = 100_000
    var window = 1000
    var prefetch: UInt16 = 500
    var ackEvery = 100
    var bodySize = 256
    var queueType = "quorum"

    init(arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            let value = iterator.next() ?? ""
            switch flag {
            case "--url": url = value
            case "--count": count = Int(value) ?? count
            case "--window": window = Int(value) ?? window
            case "--prefetch": prefetch = UInt16(value) ?? prefetch
            case "--ack-every": ackEvery = Int(value) ?? ackEvery
            case "--body-size": bodySize = Int(value) ?? bodySize
            case "--queue-type": queueType = value
            default:
                FileHandle.standardError.write(Data("unknown flag \(flag)\n".utf8))
                exit(2)
            }
        }
    }
}

func rate(_ count: Int, _ elapsed: Duration) -> String {
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return String(format: "%.0f msg/s (%d in %.2f s)", Double(count) / seconds, count, seconds)
}

let options = Options(arguments: CommandLine.arguments)
let connection = try await AMQPConnection.connect(AMQPConfiguration(url: options.url))
let channel = try await connection.openChannel()
let queue = "bench.\(UInt32.random(in: 0...UInt32.max))"
try await channel.declareQueue(queue, durable: true, arguments: ["x-queue-type": .string(options.queueType)])
try await channel.confirmSelect()
let body = [UInt8](repeating: UInt8(ascii: "x"), count: options.bodySize)
let properties = AMQPProperties(contentType: "application/json", deliveryMode: .persistent)

print("amqp-bench: \(options.count) messages of \(options.bodySize) B, \(options.queueType) queue")
let clock = ContinuousClock()
let publishStart = clock.now
try await withThrowingTaskGroup(of: Void.self) { group in
    for index in 0..<options.count {
        if index >= options.window { try await group.next() }
        group.addTask {
            try await channel.publish(body, exchange: "", routingKey: queue, mandatory: true, properties: properties)
        }
    }
    try await group.waitForAll()
}
print("confirmed publishes: \(rate(options.count, clock.now - publishStart)), window \(options.window)")

let consumerChannel = try await connection.openChannel()
try await consumerChannel.qos(prefetchCount: options.prefetch)
let consumeStart = clock.now
var received = 0
for try await delivery in try await consumerChannel.consume(queue: queue) {
    received += 1
    if received % options.ackEvery == 0 || received == options.count { try await delivery.ack(multiple: true) }
    if received == options.count { break }
}
print(
    "consumed + acked:    \(rate(received, clock.now - consumeStart)), prefetch \(options.prefetch),"
        + " multiple-ack every \(options.ackEvery)")
try await channel.deleteQueue(queue)
await connection.close()
