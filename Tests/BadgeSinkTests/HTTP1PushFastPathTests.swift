import BadgeSupport
import Foundation
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import SinkTestSupport
import Testing

@testable import BadgeSink

/// Plain HTTP/1.1 pushes answered from their bytes (``HTTP1PushFastPath``, ``HTTP1RequestHead``).
@Suite("HTTP/1.1 push fast path")
struct HTTP1PushFastPathTests {
    static let token = PushFastPathTests.token

    /// Reads `text` as a whole head.
    static func head(_ text: String) -> HTTP1RequestHead? {
        Array(text.utf8).withUnsafeBytes { HTTP1RequestHead($0) }
    }

    @Test("reads a head: method, target, lowercased names in order, the first host left out, content-length")
    func readsAHead() throws {
        let head = try #require(
            Self.head(
                "POST /3/device/abc HTTP/1.1\r\nHost: sink:8787\r\nApns-Topic: com.example\r\nContent-Length: 12\r\n"
                    + "x-odd:\tv a l\r\nhost: again\r\nx-empty-ows:   w\r\n\r\n"))
        #expect(head.method == "POST")
        #expect(head.target == "/3/device/abc")
        #expect(head.contentLength == 12)
        #expect(head.headers.map(\.name) == ["apns-topic", "content-length", "x-odd", "host", "x-empty-ows"])
        #expect(head.headers.map(\.value) == ["com.example", "12", "v a l", "again", "w"])
        #expect(Self.head("GET /stats HTTP/1.1\r\n\r\n")?.contentLength == 0)
    }

    @Test(
        "leaves to the decoder what it does not read strictly",
        arguments: [
            "GET / HTTP/1.0\r\n\r\n",
            "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
            "CONNECT sink:443 HTTP/1.1\r\n\r\n",
            "POST / HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 1\r\n\r\n",
            "POST / HTTP/1.1\r\ncontent-length: +1\r\n\r\n",
            "POST / HTTP/1.1\r\ncontent-length: 1 \r\n\r\n",
            "POST / HTTP/1.1\r\nx-a:\r\n\r\n",
            "POST / HTTP/1.1\r\nx-a : b\r\n\r\n",
            "POST / HTTP/1.1\r\nx-a: b\r\n c\r\n\r\n",
            "POST / HTTP/1.1\r\nx-a: caf\u{e9}\r\n\r\n",
            "POST  / HTTP/1.1\r\n\r\n",
            "POST /\u{7f} HTTP/1.1\r\n\r\n",
            "\r\nGET / HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1 \r\n\r\n",
        ])
    func leavesToTheDecoder(text: String) {
        #expect(Self.head(text) == nil)
    }

    @Test("finds a head's end however its bytes arrive, and a bare line feed at once")
    func findsTheEnd() {
        let text = Array("POST /3/device/abc HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}".utf8)
        let whole = text.withUnsafeBytes { HTTP1RequestHead.end(in: $0, searchingFrom: 0) }
        #expect(whole == .at(text.count - 2))
        for step in 1...7 {
            var searched = 0
            var found = HTTP1RequestHead.End.notYet
            var count = 0
            while found == .notYet, count < text.count {
                count = min(text.count, count + step)
                found = text[..<count].withUnsafeBytes { HTTP1RequestHead.end(in: $0, searchingFrom: searched) }
                searched = count
            }
            #expect(found == whole, "step \(step)")
        }
        #expect(
            Array("GET / HTTP/1.1\nx: y\n\n".utf8).withUnsafeBytes { HTTP1RequestHead.end(in: $0, searchingFrom: 0) }
                == .bareLineFeed)
    }

    /// Fragments generated heads are made of: common and odd request lines and header lines.
    static let requestLines = [
        "POST /3/device/abc HTTP/1.1", "GET /stats HTTP/1.1", "POST /v1/projects/p-1/messages:send HTTP/1.1",
        "post /x HTTP/1.1", "POST /a?b=c HTTP/1.1", "POST /%41 HTTP/1.1", "POST http://h/x HTTP/1.1", "POST * HTTP/1.1",
    ]
    static let headerLines = [
        "Host: a", "host: b", "HOST:c", "content-length: 0", "Content-Length: 3", "authorization: bearer x.y.z",
        "apns-id: 1-2", "apns-topic:t", "x-y:  spaced  out", "x-tab:\tv", "Connection: keep-alive",
        "expect: 100-continue",
        "x~odd!name: v", "cookie: a=1; b=2", "accept: */*", "x-q: \"quoted\"", "x-empty: ", "bad name: v", "x:",
        "content-length: 01",
    ]

    /// What NIO's HTTP/1 decoder and Swift HTTP Types' conversion make of `bytes`: the request and its body's
    /// length when `bytes` are exactly one request, else nil.
    static func decoded(_ bytes: [UInt8]) throws -> (HTTPRequest, Int)? {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))
        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
        defer { _ = try? channel.finish() }
        do {
            try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
        } catch {
            return nil
        }
        guard case .head(let request)? = try channel.readInbound(as: HTTPRequestPart.self) else { return nil }
        var length = 0
        while let part = try channel.readInbound(as: HTTPRequestPart.self) {
            switch part {
            case .head: return nil
            case .body(let body): length += body.readableBytes
            case .end: return (request, length)
            }
        }
        return nil
    }

    @Test("whatever it reads, NIO's decoder and the HTTP types conversion read alike (generated heads)")
    func readsAsNIODoes() throws {
        var generator = SeededGenerator(seed: 34)
        var read = 0
        for _ in 0..<3_000 {
            var lines = [Self.requestLines.randomElement(using: &generator)!]
            for _ in 0..<Int.random(in: 0...5, using: &generator) {
                lines.append(Self.headerLines.randomElement(using: &generator)!)
            }
            let bytes = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
            guard let head = bytes.withUnsafeBytes({ HTTP1RequestHead($0) }) else { continue }
            read += 1
            let text = lines.joined(separator: " | ")
            let (request, bodyLength) = try #require(
                try Self.decoded(bytes + Array(repeating: 0x20, count: head.contentLength)), "\(text)")
            #expect(bodyLength == head.contentLength, "\(text)")
            #expect(request.method.rawValue == head.method, "\(text)")
            #expect(request.path == head.target, "\(text)")
            #expect(
                SinkServer.headerList(request.headerFields).map { "\($0.name)=\($0.value)" }
                    == head.headers.map { "\($0.name)=\($0.value)" }, "\(text)")
        }
        #expect(read > 500)
    }

    @Test("pipelined requests are answered in order, router and fast path alike, however the bytes arrive")
    func pipelined() async throws {
        try await TestSink.withSink { sink in
            let push = { (id: String) in
                "POST /3/device/\(Self.token) HTTP/1.1\r\nhost: sink\r\napns-id: \(id)\r\ncontent-length: 10\r\n\r\n"
                    + "{\"aps\":{}}"
            }
            let requests =
                push("p-1") + "GET /stats HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n" + push("p-2") + push("p-3")
                + "POST /3/device/\(Self.token) HTTP/1.1\r\ntransfer-encoding: chunked\r\napns-id: p-4\r\n\r\n"
                + "a\r\n{\"aps\":{}}\r\n0\r\n\r\n" + push("p-5")
            for chunk in [Int.max, 1, 7] {
                let answers = try await RawHTTPClient.exchange(
                    port: sink.port, bytes: Array(requests.utf8), chunk: chunk, answers: 6)
                #expect(answers.map(\.status) == [200, 200, 200, 200, 200, 200], "chunk \(chunk)")
                #expect(
                    answers.map { $0.headers["apns-id"] } == ["p-1", nil, "p-2", "p-3", "p-4", "p-5"], "chunk \(chunk)")
                #expect(answers[1].body.first == UInt8(ascii: "{"))
            }
            // Every push recorded; p-1 answered at once each time, p-2 and p-3 when the router's answer came before
            // them; p-4 (chunked) and p-5 after it by the router.
            #expect(sink.state.count == 15)
            #expect((3...9).contains(sink.state.recordedUnlessFaulted.load(ordering: .relaxed)))
        }
    }
}

/// A blocking HTTP/1.1 client over one socket, on a thread of its own: it writes bytes as given and reads answers
/// with a `content-length`.
enum RawHTTPClient {
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
    }

    /// Writes `bytes` in writes of `chunk` bytes, then reads `answers` answers.
    static func exchange(port: Int, bytes: [UInt8], chunk: Int, answers: Int) async throws -> [Answer] {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result { try Self.run(port: port, bytes: bytes, chunk: chunk, answers: answers) })
            }
        }
    }

    private static func run(port: Int, bytes: [UInt8], chunk: Int, answers count: Int) throws -> [Answer] {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw SinkAnswer.Failure(description: "socket: \(errno)") }
        defer { close(socket) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw SinkAnswer.Failure(description: "connect: \(errno)") }
        var offset = 0
        while offset < bytes.count {
            let end = offset + min(chunk, bytes.count - offset)
            let written = bytes[offset..<end].withUnsafeBytes { write(socket, $0.baseAddress, $0.count) }
            guard written > 0 else { throw SinkAnswer.Failure(description: "write: \(errno)") }
            offset += written
            if chunk < bytes.count {
                usleep(200)
            }
        }
        var received: [UInt8] = []
        var answers: [Answer] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while answers.count < count {
            if let (answer, length) = Self.answer(in: received) {
                answers.append(answer)
                received.removeFirst(length)
                continue
            }
            let read = buffer.withUnsafeMutableBytes { Glibc.read(socket, $0.baseAddress, $0.count) }
            guard read > 0 else {
                throw SinkAnswer.Failure(description: "read \(read) after \(answers.count) answers: \(errno)")
            }
            received += buffer[..<read]
        }
        return answers
    }

    /// The first answer in `bytes` and its length, when it is all there.
    private static func answer(in bytes: [UInt8]) -> (Answer, Int)? {
        let separator = Array("\r\n\r\n".utf8)
        guard let headEnd = (0..<max(0, bytes.count - 3)).first(where: { Array(bytes[$0..<$0 + 4]) == separator })
        else { return nil }
        let lines = String(decoding: bytes[..<headEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        guard bytes.count >= headEnd + 4 + length else { return nil }
        return (
            Answer(status: status, headers: headers, body: Array(bytes[headEnd + 4..<headEnd + 4 + length])),
            headEnd + 4 + length
        )
    }
}
