import Testing

@testable import BadgeWire

@Suite("Push payload summary")
struct PushPayloadSummaryTests {
    @Test func readsAnAPNsAlert() throws {
        let body = #"{"aps":{"alert":{"title":"New follower","body":"x"},"badge":1},"type":"follow","badge_version":2}"#
        let summary = try #require(PushPayloadSummary(body: Array(body.utf8), provider: .apns))
        #expect(summary.type == "follow" && summary.badge == 1 && summary.badgeVersion == 2)
        #expect(summary.alertTitle == "New follower")
    }

    @Test func readsTheAPNsPayloadOfAnFCMMessageAndItsToken() throws {
        let body = #"{"message":{"token":"t1","apns":{"payload":{"aps":{"badge":"4"},"badge_version":9}}}}"#
        let summary = try #require(PushPayloadSummary(body: Array(body.utf8), provider: .fcm))
        #expect(summary.type == nil && summary.badge == 4 && summary.badgeVersion == 9 && summary.alertTitle == nil)
        #expect(PushPayloadSummary.fcmToken(in: Array(body.utf8)) == "t1")
    }

    @Test func nothingForBodiesWithoutAPayloadObject() {
        #expect(PushPayloadSummary(body: Array("not json".utf8), provider: .apns) == nil)
        #expect(PushPayloadSummary(body: Array("[1]".utf8), provider: .apns) == nil)
        #expect(PushPayloadSummary(body: Array(#"{"message":{"token":"t"}}"#.utf8), provider: .fcm) == nil)
        #expect(PushPayloadSummary.fcmToken(in: Array(#"{"message":{"token":5}}"#.utf8)) == nil)
    }
}
