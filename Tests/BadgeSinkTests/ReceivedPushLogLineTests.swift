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
}
