import Foundation
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
