import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How ``BadgePipeClient`` talks HTTP: URLSession on Apple platforms, async-http-client elsewhere.
public protocol BadgePipeTransport: Sendable {
    /// Sends `request` and returns the status and the whole body.
    func send(_ request: URLRequest) async throws -> (status: Int, body: Data)
    /// Sends `request` and returns the body's lines as they arrive (a non-200 answer throws
    /// ``BadgePipeClientError``).
    func lines(_ request: URLRequest) async throws -> AsyncThrowingStream<String, any Error>
}

#if canImport(Darwin)
    /// URLSession.
    struct DefaultTransport: BadgePipeTransport {
        func send(_ request: URLRequest) async throws -> (status: Int, body: Data) {
            let (data, response) = try await URLSession.shared.data(for: request)
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
        }

        func lines(_ request: URLRequest) async throws -> AsyncThrowingStream<String, any Error> {
            let (bytes, response) = try await URLSession.shared.bytes(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            guard status == 200 else { throw BadgePipeClientError(status: status, body: Data()) }
            return AsyncThrowingStream { continuation in
                let task = Task {
                    do {
                        var line: [UInt8] = []
                        for try await byte in bytes {
                            if byte == 0x0A {
                                continuation.yield(String(decoding: line, as: UTF8.self))
                                line.removeAll(keepingCapacity: true)
                            } else if byte != 0x0D {
                                line.append(byte)
                            }
                        }
                        continuation.finish()
                    } catch {
                        continuation.finish(throwing: error)
                    }
                }
                continuation.onTermination = { _ in task.cancel() }
            }
        }
    }
#else
    import AsyncHTTPClient
    import NIOCore
    import NIOHTTP1

    /// async-http-client's shared client.
    struct DefaultTransport: BadgePipeTransport {
        func send(_ request: URLRequest) async throws -> (status: Int, body: Data) {
            let response = try await HTTPClient.shared.execute(Self.convert(request), timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 16 << 20)
            return (Int(response.status.code), Data(body.readableBytesView))
        }

        func lines(_ request: URLRequest) async throws -> AsyncThrowingStream<String, any Error> {
            let response = try await HTTPClient.shared.execute(Self.convert(request), timeout: .hours(24))
            guard response.status == .ok else {
                let body = try await response.body.collect(upTo: 1 << 20)
                throw BadgePipeClientError(status: Int(response.status.code), body: Data(body.readableBytesView))
            }
            return AsyncThrowingStream { continuation in
                let task = Task {
                    do {
                        var line: [UInt8] = []
                        for try await chunk in response.body {
                            for byte in chunk.readableBytesView {
                                if byte == 0x0A {
                                    continuation.yield(String(decoding: line, as: UTF8.self))
                                    line.removeAll(keepingCapacity: true)
                                } else if byte != 0x0D {
                                    line.append(byte)
                                }
                            }
                        }
                        continuation.finish()
                    } catch {
                        continuation.finish(throwing: error)
                    }
                }
                continuation.onTermination = { _ in task.cancel() }
            }
        }

        static func convert(_ request: URLRequest) -> HTTPClientRequest {
            var converted = HTTPClientRequest(url: request.url?.absoluteString ?? "")
            converted.method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
            for (name, value) in request.allHTTPHeaderFields ?? [:] { converted.headers.add(name: name, value: value) }
            if let body = request.httpBody { converted.body = .bytes(ByteBuffer(bytes: body)) }
            return converted
        }
    }
#endif
