import AsyncHTTPClient
import Foundation
import NIOCore
import SinkTestSupport
import Testing

@testable import BadgeSink

@Suite("ReceivedPushLogLine")
struct ReceivedPushLogLineTests {
    static let token = "aaaa0000111122223333444455556666777788889999aaaabbbbccccdddd0000"

    @Test("summarises an APNs alert")
    func apns() {
        let body = """
            {"aps":{"alert":{"title":"New follower","body":"x"},"badge":1},"type":"follow","badge_version":2}
            """
        let answer = PushAnswer(seq: 3, provider: .apns, status: 200, reason: nil, receivedAt: Date())
        let line = ReceivedPushLogLine.make(answer: answer, token: Self.token, body: Array(body.utf8))
        #expect(line == "push seq=3 apns aaaa0000…0000 type=follow badge=1 version=2 status=200 title=\"New follower\"")
    }

    @Test("summarises an FCM message from message.apns.payload, with the error")
    func fcm() {
        let body = """
            {"message":{"token":"t","apns":{"payload":{"aps":{"badge":0},"type":"badge","badge_version":9}}}}
            """
        let answer = PushAnswer(seq: 12, provider: .fcm, status: 404, reason: "UNREGISTERED", receivedAt: Date())
        let line = ReceivedPushLogLine.make(answer: answer, token: "short", body: Array(body.utf8))
        #expect(line == "push seq=12 fcm short type=badge badge=0 version=9 status=404 reason=UNREGISTERED")
    }

    @Test("copes with a body that is not JSON")
    func notJSON() {
        let answer = PushAnswer(seq: 1, provider: .apns, status: 200, reason: nil, receivedAt: Date())
        let line = ReceivedPushLogLine.make(answer: answer, token: "t", body: Array("x".utf8))
        #expect(line == "push seq=1 apns t status=200")
    }

    @Test("escapes every field a push or a fault sets: no second line, fake field or terminal escape")
    func forgeries() throws {
        let type = "follow status=200\npush seq=99 apns fake"
        let title = "hi\u{1B}[2J\u{202E}\"x\\"
        let body = try JSONSerializationBody([
            "aps": ["alert": ["title": title], "badge": 1], "type": type, "badge_version": 2,
        ])
        let answer = PushAnswer(
            seq: 4, provider: .apns, status: 410, reason: "Unregistered\r\npush seq=100", receivedAt: Date())
        let line = ReceivedPushLogLine.make(answer: answer, token: "tok en\u{1B}]0;x\u{07}", body: body)
        #expect(!line.contains("\n") && !line.contains("\r"))
        #expect(!line.unicodeScalars.contains { $0.properties.generalCategory == .control })
        #expect(!line.unicodeScalars.contains { $0.properties.generalCategory == .format })
        #expect(line.contains(#"type="follow status=200\u000Apush seq=99 apns fake""#), "\(line)")
        #expect(line.contains(#"reason="Unregistered\u000D\u000Apush seq=100""#), "\(line)")
        #expect(line.contains(#"title="hi\u001B[2J\u202E\"x\\""#), "\(line)")
        #expect(line.hasPrefix(#"push seq=4 apns "tok en\u001B]0;x\u0007" "#), "\(line)")
    }

    private func JSONSerializationBody(_ object: [String: Any]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: object))
    }
}

/// `badgepipe sink --log-deliveries` as it runs: pushes and a fault that carry newlines, fake fields and terminal
/// escapes in every field the log line shows, sent over HTTP to the sink's own process, leave one plain line per
/// push on its standard output.
@Suite("The sink's delivery log", .timeLimit(.minutes(1)))
struct DeliveryLogProcessTests {
    /// The `badgepipe` executable of this build (or `BADGEPIPE_BIN`).
    static var executable: URL {
        if let path = ProcessInfo.processInfo.environment["BADGEPIPE_BIN"] { return URL(fileURLWithPath: path) }
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("badgepipe")
        if FileManager.default.fileExists(atPath: beside.path) { return beside }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/badgepipe")
    }

    @Test("a push cannot write a line, a field or an escape into the log")
    func forgedPushes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sink-log-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("stdout")
        let errors = directory.appendingPathComponent("stderr")
        FileManager.default.createFile(atPath: output.path, contents: nil)
        FileManager.default.createFile(atPath: errors.path, contents: nil)
        let process = Process()
        process.executableURL = Self.executable
        process.arguments = ["sink", "--port", "0", "--log-deliveries"]
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BADGEPIPE_") }
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        defer {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
        let url = try await Self.listening(errors, process: process)

        let forged = "\n\r\u{1B}[2J\u{1B}]0;owned\u{07}\u{9B}31m\u{202E}\" push seq=99 apns fake status=200 "
        func json(_ object: [String: Any]) throws -> String {
            String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        }
        let payload: [String: Any] = [
            "aps": ["alert": ["title": "t" + forged, "body": "b"], "badge": 1],
            "type": "follow" + forged, "badge_version": 1,
        ]
        #expect(try await Self.send(url, "/3/device/phone-1", body: json(payload)) == 200)
        #expect(try await Self.send(url, "/3/device/aa%0A%1B%5B2Jpush%20seq=98", body: json(payload)) == 200)
        let fault: [String: Any] = ["token": "phone-2", "status": 410, "reason": "Unregistered" + forged, "times": 1]
        #expect(try await Self.send(url, "/faults", body: json(fault)) == 200)
        #expect(try await Self.send(url, "/3/device/phone-2", body: json(payload)) == 410)
        let message: [String: Any] = ["message": ["token": "fcm" + forged, "apns": ["payload": payload]]]
        #expect(try await Self.send(url, "/v1/projects/demo/messages:send", body: json(message)) == 200)

        process.terminate()
        process.waitUntilExit()
        let log = String(decoding: try Data(contentsOf: output), as: UTF8.self)
        let lines = log.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 5 && lines.last == "", "four lines:\n\(log)")
        for line in lines.dropLast() {
            #expect(line.hasPrefix("push seq="), "\(line)")
            let raw = line.unicodeScalars.filter {
                $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0.properties.generalCategory == .format
            }
            #expect(raw.isEmpty, "\(raw.map(\.value)) in \(line)")
            // Outside its quoted values, the line has its own fields only.
            let fields = Self.unquoted(line)
            #expect(fields.components(separatedBy: "seq=").count == 2 && !fields.contains("fake"), "\(line)")
        }
        #expect(log.contains(#"type="follow\u000A\u000D\u001B[2J"#), "\(log)")
        #expect(log.contains(#"reason="Unregistered\u000A"#), "\(log)")
        #expect(log.contains(#"fcm "fcm\u000A"#), "\(log)")
    }

    /// `line` without its quoted values (`"…"`, with backslash escapes).
    static func unquoted(_ line: Substring) -> String {
        var out = ""
        var quoted = false
        var escaped = false
        for character in line {
            if quoted {
                if escaped {
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    quoted = false
                }
            } else if character == "\"" {
                quoted = true
            } else {
                out.append(character)
            }
        }
        return out
    }

    /// The sink's URL once its process says it listens.
    static func listening(_ errors: URL, process: Process) async throws -> String {
        for _ in 0..<300 {
            let text = String(decoding: try Data(contentsOf: errors), as: UTF8.self)
            if let range = text.range(of: #"sink\.port=[0-9]+"#, options: .regularExpression) {
                return "http://127.0.0.1:" + text[range].dropFirst("sink.port=".count)
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let text = String(decoding: try Data(contentsOf: errors), as: UTF8.self)
        throw SinkAnswer.Failure(description: "the sink did not start: \(text)")
    }

    /// `POST path` with a JSON body: the answer's status.
    static func send(_ url: String, _ path: String, body: String) async throws -> Int {
        var request = HTTPClientRequest(url: url + path)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }
}
