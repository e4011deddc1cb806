import AsyncHTTPClient
import BadgeWorker
import Foundation
import NIOCore

/// The few reads `badgepipe setup` makes from RabbitMQ's management HTTP API (the `rabbitmq_management` plugin):
/// the cluster's nodes, a queue's type, members and leader, and the queues bound to an exchange.
struct ManagementAPI {
    /// The API's root, without credentials (`http://rabbit:15672`).
    var base: String
    /// `Authorization: Basic …`, from the URL's user info (default guest:guest).
    var authorization: String
    var virtualHost: String
    let client: HTTPClient

    /// Reads `http://user:pass@host:15672` (a trailing `/api` is optional).
    init(url: String, virtualHost: String, client: HTTPClient) throws {
        guard var components = URLComponents(string: url), let scheme = components.scheme,
            scheme == "http" || scheme == "https", components.host != nil
        else {
            throw CommandError(
                code: .invalidSetting, message: "the management URL must be http(s)://user:pass@host:port")
        }
        let user = components.user ?? "guest"
        let password = components.password ?? "guest"
        components.user = nil
        components.password = nil
        var path = components.path
        while path.hasSuffix("/") { path.removeLast() }
        if path.hasSuffix("/api") { path.removeLast(4) }
        components.path = path
        self.base = components.string ?? url
        self.authorization = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        self.virtualHost = virtualHost
        self.client = client
    }

    /// The names of the cluster's nodes.
    func nodes() async throws -> [String] {
        struct Node: Decodable { var name: String }
        guard let nodes = try await get([Node].self, "/api/nodes") else {
            throw CommandError(code: .managementAPI, message: "\(base)/api/nodes: not found")
        }
        return nodes.map(\.name)
    }

    /// A queue's replication, or nil when it does not exist.
    func queue(_ name: String) async throws -> QueueReplication? {
        struct Queue: Decodable {
            var name: String
            var type: String?
            var node: String?
            var members: [String]?
            var leader: String?
        }
        guard let queue = try await get(Queue.self, "/api/queues/\(escaped(virtualHost))/\(escaped(name))") else {
            return nil
        }
        let type = queue.type ?? "classic"
        let members = queue.members ?? (queue.node.map { [$0] } ?? [])
        return QueueReplication(
            queue: queue.name, type: type, members: members.sorted(), leader: queue.leader ?? queue.node)
    }

    /// The queues `exchange` routes to directly.
    func queuesBound(to exchange: String) async throws -> [String] {
        struct Binding: Decodable {
            var destination: String
            var destination_type: String
        }
        let bindings =
            try await get(
                [Binding].self, "/api/exchanges/\(escaped(virtualHost))/\(escaped(exchange))/bindings/source") ?? []
        return Array(Set(bindings.filter { $0.destination_type == "queue" }.map(\.destination))).sorted()
    }

    private func escaped(_ segment: String) -> String {
        segment.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))
            ?? segment
    }

    /// GETs `path` and decodes it; nil when the API answers 404.
    private func get<Value: Decodable>(_ type: Value.Type, _ path: String) async throws -> Value? {
        var request = HTTPClientRequest(url: base + path)
        request.headers.add(name: "Authorization", value: authorization)
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: .seconds(10))
        } catch {
            throw CommandError(code: .managementAPI, message: "\(base)\(path): \(error)")
        }
        let body = try await response.body.collect(upTo: 16 << 20)
        if response.status.code == 404 { return nil }
        guard response.status.code == 200 else {
            throw CommandError(
                code: .managementAPI, message: "\(base)\(path): HTTP \(response.status.code) \(String(buffer: body))")
        }
        do {
            return try JSONDecoder().decode(Value.self, from: Data(body.readableBytesView))
        } catch {
            throw CommandError(code: .managementAPI, message: "\(base)\(path): unexpected answer: \(error)")
        }
    }
}
