import BadgeModel
import BadgeWire
import Testing

@testable import BadgeCore

@Suite("Push payloads")
struct PushPayloadBuilderTests {
    let builder = PushPayloadBuilder(defaultAPNsTopic: "com.example.default", fcmProject: "proj-1")

    private func alertPush(
        _ event: Event, token: String = tokenA, provider: PushProvider = .apns, topic: String? = nil,
        counts: Counts = Counts(unreadNotifications: 1, unseenNotifications: 1), badge: Int = 1,
        version: Int64 = 1, previews: Bool = true
    ) -> PlannedPush {
        PlannedPush(
            recipient: event.recipient, eventID: event.id, eventType: event.type, token: token, provider: provider,
            topic: topic, environment: .production, kind: .alert(event), counts: counts, badge: badge,
            badgeVersion: version, previews: previews)
    }

    private func badgePush(
        type: EventType = .notificationRead, token: String = tokenA, provider: PushProvider = .apns,
        badge: Int = 2, version: Int64 = 5
    ) -> PlannedPush {
        PlannedPush(
            recipient: alice, eventID: "r-1", eventType: type, token: token, provider: provider, kind: .badgeOnly,
            counts: Counts(unreadNotifications: 3, unseenNotifications: 1, unreadMessages: 1), badge: badge,
            badgeVersion: version)
    }

    private func alertOf(_ request: PushRequest) throws -> AlertText {
        let body = try JSONValue.parse(request.body)
        let alert =
            request.provider == .apns ? body["aps"]?["alert"] : body["message"]?["apns"]?["payload"]?["aps"]?["alert"]
        return AlertText(
            title: try #require(alert?["title"]?.stringValue), body: try #require(alert?["body"]?.stringValue))
    }

    private let followEvent = Event(
        id: "evt-follow-1", type: .follow, recipient: alice, occurredAt: at(0), actor: bob)

    @Test func followAlertForAPNs() throws {
        let request = builder.build(alertPush(followEvent))
        #expect(request.provider == .apns)
        #expect(request.path == "/3/device/\(tokenA)")
        #expect(
            request.bodyString
                == #"{"aps":{"alert":{"title":"New follower","body":"Bob Stone started following you"},"badge":1,"#
                + #""sound":"default","thread-id":"follows"},"type":"follow","event_id":"evt-follow-1","#
                + #""notification_id":"evt-follow-1","badge_version":1,"#
                + #""counts":{"unread_notifications":1,"unseen_notifications":1,"unread_messages":0}}"#)
        #expect(request.header("apns-topic") == "com.example.default")
        #expect(request.header("apns-push-type") == "alert")
        #expect(request.header("apns-priority") == "10")
        #expect(request.header("APNS-ID") == request.apnsID)
        #expect(request.header("apns-collapse-id") == nil)
        #expect(request.environment == .production)
        let topicRequest = builder.build(alertPush(followEvent, topic: "com.example.amen"))
        #expect(topicRequest.header("apns-topic") == "com.example.amen")
    }

    @Test func badgeOnlyForAPNs() {
        let request = builder.build(badgePush())
        #expect(
            request.bodyString
                == #"{"aps":{"badge":2},"type":"notification_read","badge_version":5,"#
                + #""counts":{"unread_notifications":3,"unseen_notifications":1,"unread_messages":1}}"#)
        #expect(request.header("apns-push-type") == "alert", "a badge change is an alert push for APNs")
        #expect(request.header("apns-priority") == "5")
        #expect(request.header("apns-collapse-id") == "badge")
        #expect(request.apnsID != nil)
        #expect(request.header("apns-id") == request.apnsID)
        let registered = builder.build(badgePush(type: .deviceRegistered))
        #expect(registered.bodyString.contains(#""type":"device_registered""#))
    }

    @Test func apnsIDIsDeterministicPerEventAndToken() {
        let first = builder.build(alertPush(followEvent)).apnsID
        let rebuilt = builder.build(alertPush(followEvent, badge: 7, version: 9)).apnsID
        let otherToken = builder.build(alertPush(followEvent, token: tokenB)).apnsID
        #expect(first != nil)
        #expect(first == rebuilt)
        #expect(first != otherToken)
        let uuidShape = #/^[0-9A-F]{8}-[0-9A-F]{4}-5[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}$/#
        #expect(first?.wholeMatch(of: uuidShape) != nil)
        #expect(builder.build(badgePush(version: 5)).apnsID == builder.build(badgePush(version: 5)).apnsID)
        #expect(builder.build(badgePush(version: 5)).apnsID != builder.build(badgePush(version: 6)).apnsID)
        #expect(builder.build(badgePush(token: tokenB)).apnsID != builder.build(badgePush()).apnsID)
        #expect(builder.build(alertPush(followEvent, provider: .fcm)).apnsID == nil)
    }

    @Test func fcmAlert() throws {
        let push = alertPush(followEvent, token: "fcm-token-1", provider: .fcm)
        let request = builder.build(push)
        #expect(request.path == "/v1/projects/proj-1/messages:send")
        #expect(request.header("content-type") == "application/json")
        let body = try JSONValue.parse(request.body)
        let message = try #require(body["message"])
        #expect(message["token"] == "fcm-token-1")
        #expect(
            message["apns"]?["payload"]
                == builder.apnsPayload(push, alert: AlertText(event: followEvent, previews: true)))
        #expect(
            message["android"]
                == [
                    "notification": [
                        "title": "New follower", "body": "Bob Stone started following you", "notification_count": 1,
                    ]
                ])
        #expect(
            message["data"]
                == [
                    "type": "follow", "badge": "1", "badge_version": "1", "unread_notifications": "1",
                    "unseen_notifications": "1", "unread_messages": "0", "event_id": "evt-follow-1",
                ])
        for member in message["data"]?.objectMembers ?? [] {
            #expect(member.value.stringValue != nil, "data.\(member.key) must be a string")
        }
    }

    @Test func fcmBadgeOnly() throws {
        let request = builder.build(badgePush(provider: .fcm))
        let message = try #require(try JSONValue.parse(request.body)["message"])
        #expect(message["android"] == ["notification": ["notification_count": 2]])
        #expect(
            message["data"]
                == [
                    "type": "notification_read", "badge": "2", "badge_version": "5", "unread_notifications": "3",
                    "unseen_notifications": "1", "unread_messages": "1",
                ])
        #expect(message["apns"]?["payload"]?["aps"] == ["badge": 2])
        #expect(request.apnsID == nil)
    }

    @Test func alertTextsPerType() {
        let carol = EventActor(id: "u-carol", name: "Carol")
        func text(_ type: EventType, text: String? = nil, title: String? = nil, previews: Bool = true) -> AlertText {
            AlertText(
                event: Event(
                    id: "e", type: type, recipient: alice, occurredAt: at(0),
                    actor: type == .prayerReminder ? nil : carol,
                    postID: "p", conversationID: "c", title: title, text: text), previews: previews)
        }
        #expect(text(.follow) == AlertText(title: "New follower", body: "Carol started following you"))
        #expect(text(.amen) == AlertText(title: "Amen", body: "Carol said Amen to your post"))
        #expect(text(.comment, text: "Nice") == AlertText(title: "Carol commented on your post", body: "Nice"))
        #expect(text(.comment, text: "Nice", previews: false).body == "New comment")
        #expect(text(.mention, text: "@a hi") == AlertText(title: "Carol mentioned you", body: "@a hi"))
        #expect(text(.mention).body == "Carol mentioned you in a post")
        #expect(text(.mention, text: "@a secret", previews: false).body == "New mention")
        #expect(text(.followRequestAccepted).body == "Carol accepted your follow request")
        #expect(text(.messageRequestAccepted).body == "Carol accepted your message request")
        #expect(text(.prayerReminder) == AlertText(title: "Prayer reminder", body: "It's time to pray"))
        #expect(text(.prayerReminder, text: "Pray", title: "Time") == AlertText(title: "Time", body: "Pray"))
        #expect(text(.message, text: "hey") == AlertText(title: "Carol", body: "hey"))
        #expect(text(.message) == AlertText(title: "Carol", body: "New message"))
        #expect(text(.message, text: "secret", previews: false).body == "New message")
    }

    @Test func previewsFalseHidesUserTextInTheRequest() throws {
        let event = Event(
            id: "m-1", type: .message, recipient: alice, occurredAt: at(0), actor: bob, conversationID: "conv-1",
            text: "my secret plan")
        for provider in PushProvider.allCases {
            let request = builder.build(alertPush(event, provider: provider, previews: false))
            #expect(!request.bodyString.contains("secret"))
            #expect(try alertOf(request).body == "New message")
        }
        let shown = builder.build(alertPush(event, previews: true))
        #expect(try alertOf(shown).body == "my secret plan")
    }

    @Test func messageAlertCarriesConversationNotNotificationID() throws {
        let event = Event(
            id: "m-1", type: .message, recipient: alice, occurredAt: at(0), actor: bob, conversationID: "conv-1",
            text: "hi")
        let body = try JSONValue.parse(builder.build(alertPush(event)).body)
        #expect(body["conversation_id"] == "conv-1")
        #expect(body["notification_id"] == nil)
        #expect(body["event_id"] == "m-1")
        #expect(body["aps"]?["thread-id"] == "conversation:conv-1")
        let comment = Event(
            id: "c-1", type: .comment, recipient: alice, occurredAt: at(0), actor: bob, postID: "post-42", text: "x")
        let commentBody = try JSONValue.parse(builder.build(alertPush(comment)).body)
        #expect(commentBody["aps"]?["thread-id"] == "post:post-42")
        #expect(commentBody["notification_id"] == "c-1")
        #expect(commentBody["conversation_id"] == nil)
    }

    // MARK: - Size limits

    private func checkFits(_ request: PushRequest, original: AlertText) throws {
        #expect(request.body.count <= PushPayloadBuilder.maxBodyBytes)
        #expect(UTF8Validation.firstInvalidOffset(request.body) == nil)
        let shown = try alertOf(request)
        for (field, full) in [(shown.title, original.title), (shown.body, original.body)] where field != full {
            #expect(field.hasSuffix("…"))
            let kept = String(field.dropLast())
            // No grapheme is split: the kept prefix is a prefix of the original in whole Characters.
            #expect(Array(full).starts(with: Array(kept)))
            #expect(full.hasPrefix(kept))
        }
    }

    @Test(arguments: PushProvider.allCases)
    func hugeEmojiTextIsShortenedOnGraphemeBoundaries(provider: PushProvider) throws {
        let family = "👨‍👩‍👧‍👦"
        let flags = "🇳🇿🇫🇷"
        let combining = "e\u{301}\u{302}\u{303}\u{304}"
        for text in [
            String(repeating: family, count: 2857), String(repeating: flags, count: 2500),
            String(repeating: combining, count: 4000), "x" + String(repeating: "\u{301}", count: 5000) + "y",
            String(repeating: "\u{1}\"\\", count: 6000),
        ] {
            let event = Event(
                id: "c-1", type: .comment, recipient: alice, occurredAt: at(0), actor: bob, postID: "p", text: text)
            let request = builder.build(alertPush(event, provider: provider))
            try checkFits(request, original: AlertText(event: event, previews: true))
            #expect(try alertOf(request).body.hasSuffix("…"))
        }
    }

    /// An alert to many devices is cut once per text, layout and bytes left (``AlertCuts``): every push of it comes
    /// out exactly as a builder that searches each time makes it, whatever its badge, counts, version and token.
    @Test(arguments: PushProvider.allCases)
    func pushesOfOneAlertCutWhereTheFirstWasCutAreThoseOfAFullSearch(provider: PushProvider) throws {
        let shared = PushPayloadBuilder(defaultAPNsTopic: "com.example.default", fcmProject: "proj-1")
        for text in [
            String(repeating: "\"", count: 20_000), String(repeating: "👨‍👩‍👧‍👦 a", count: 2000),
            String(repeating: "e\u{301}x", count: 3000),
        ] {
            let event = Event(
                id: "c-\(text.utf8.count)", type: .comment, recipient: alice, occurredAt: at(0), actor: bob,
                postID: "p",
                text: text)
            for (index, badge) in [1, 9, 10, 99, 100, 12_345, 7, 1_000_000].enumerated() {
                let push = alertPush(
                    event, token: "token-\(String(repeating: "t", count: index * 37))", provider: provider,
                    counts: Counts(unreadNotifications: badge, unseenNotifications: badge / 3, unreadMessages: index),
                    badge: badge, version: Int64(badge) * 1_000 + Int64(index))
                let searched = PushPayloadBuilder(
                    defaultAPNsTopic: "com.example.default", fcmProject: "proj-1", cuts: AlertCuts()
                ).build(push)
                #expect(shared.build(push).body == searched.body, "badge \(badge)")
                try checkFits(searched, original: AlertText(event: event, previews: true))
            }
        }
        #expect(shared.cuts.count > 0)
    }

    /// The same key for another text (not how the builder keys them) finds no cut: the text is searched.
    @Test func aCutIsForItsOwnTextOnly() {
        let render: (AlertText) -> [UInt8] = { Array(($0.title + "|" + $0.body).utf8) }
        let cuts = AlertCuts()
        let first = PushPayloadBuilder.fit(
            AlertText(title: "T", body: "€€€€€€€€"), limit: 12, cuts: cuts, key: "k", render: render)
        #expect(String(decoding: first, as: UTF8.self) == "T|€€…")
        // Two Characters would fit, but seven do.
        let other = PushPayloadBuilder.fit(
            AlertText(title: "T", body: "abcdefghijklmnop"), limit: 12, cuts: cuts, key: "k", render: render)
        #expect(String(decoding: other, as: UTF8.self) == "T|abcdefg…")
    }

    @Test(arguments: PushProvider.allCases)
    func hugeTitleIsShortenedToo(provider: PushProvider) throws {
        let event = Event(
            id: "pr-1", type: .prayerReminder, recipient: alice, occurredAt: at(0),
            title: String(repeating: "🙏🏽", count: 500), text: String(repeating: "🕊️", count: 6000))
        let request = builder.build(alertPush(event, provider: provider))
        let original = AlertText(event: event, previews: true)
        try checkFits(request, original: original)
        let shown = try alertOf(request)
        #expect(shown.body == "…")
        #expect(shown.title != original.title)
    }

    @Test func shortTextIsUntouched() throws {
        let event = Event(
            id: "c-1", type: .comment, recipient: alice, occurredAt: at(0), actor: bob, postID: "p",
            text: String(repeating: "a", count: 3000))
        let request = builder.build(alertPush(event))
        #expect(try alertOf(request).body == String(repeating: "a", count: 3000))
    }

    @Test func fitFindsTheLongestPrefix() {
        let render: (AlertText) -> [UInt8] = { Array(($0.title + "|" + $0.body).utf8) }
        let fitted = PushPayloadBuilder.fit(AlertText(title: "T", body: "abcdefghijklmnop"), limit: 12, render: render)
        #expect(String(decoding: fitted, as: UTF8.self) == "T|abcdefg…")
        let fittedTitle = PushPayloadBuilder.fit(
            AlertText(title: "ABCDEFGHIJ", body: "abcdefghijklmnop"), limit: 10, render: render)
        #expect(String(decoding: fittedTitle, as: UTF8.self) == "ABC…|…")
        let exact = PushPayloadBuilder.fit(AlertText(title: "T", body: "abcdefghij"), limit: 12, render: render)
        #expect(String(decoding: exact, as: UTF8.self) == "T|abcdefghij")
    }

    @Test func everyBuiltPushOfTheModelFits() throws {
        var model = InboxModel()
        _ = model.apply(register("r-a", token: tokenA))
        _ = model.apply(register("r-b", token: "fcm-token-2", provider: .fcm))
        let long = String(repeating: "👩🏽‍💻 ", count: 3000)
        for push in model.apply(message("m-1", at: 1, text: long)).pushes {
            let request = builder.build(push)
            #expect(request.body.count <= 4096)
            #expect((try? JSONValue.parse(request.body)) != nil)
        }
    }
}
