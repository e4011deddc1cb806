import BadgeModel
import Testing

@testable import BadgeCore

@Suite("InboxModel rules")
struct InboxModelTests {
    /// A model with device A registered for alice.
    private func modelWithDevice(policy: BadgePolicy = .unseen) -> InboxModel {
        var model = InboxModel(policy: policy)
        _ = model.apply(register("reg-a", token: tokenA))
        return model
    }

    @Test func notificationCountsAndAlerts() {
        var model = modelWithDevice()
        let event = follow("n1", at: 1)
        let outcome = model.apply(event)
        #expect(outcome.changed)
        #expect(outcome.pushes.count == 1)
        let push = outcome.pushes[0]
        #expect(push.kind == .alert(event))
        #expect(push.token == tokenA)
        #expect(push.counts == Counts(unreadNotifications: 1, unseenNotifications: 1, unreadMessages: 0))
        #expect(push.badge == 1)
        #expect(push.badgeVersion == 1)
        #expect(model.badgeVersion(of: alice) == 1)
        #expect(model.isNotificationRead("n1", of: alice) == false)
    }

    @Test func deviceRegistrationSendsCurrentBadgeWithoutVersionChange() {
        var model = InboxModel()
        _ = model.apply(follow("n1", at: 1))
        _ = model.apply(follow("n2", at: 2))
        #expect(model.badgeVersion(of: alice) == 2)
        let outcome = model.apply(register("reg-a", token: tokenA, at: 3))
        #expect(outcome.pushes.count == 1)
        #expect(outcome.pushes[0].kind == .badgeOnly)
        #expect(outcome.pushes[0].badge == 2)
        #expect(outcome.pushes[0].badgeVersion == 2)
        #expect(outcome.pushes[0].eventType == .deviceRegistered)
        #expect(model.badgeVersion(of: alice) == 2)
        #expect(model.activeDevices(of: alice).map(\.token) == [tokenA])

        // Registering another device pushes only to that one.
        let second = model.apply(register("reg-b", token: tokenB, at: 4))
        #expect(second.pushes.map(\.token) == [tokenB])
        #expect(model.apply(follow("n3", at: 5)).pushes.map(\.token) == [tokenA, tokenB])
    }

    @Test func tombstoneMakesALaterNotificationArriveRead() {
        var model = modelWithDevice()
        let read = model.apply(readState("r1", .notificationRead, at: 5, ids: ["n1"]))
        #expect(read.pushes.isEmpty)
        #expect(read.changed)
        #expect(model.badgeVersion(of: alice) == 0)
        let arrival = model.apply(follow("n1", at: 1))
        #expect(arrival.pushes.isEmpty)
        #expect(model.counts(of: alice) == .zero)
        #expect(model.badgeVersion(of: alice) == 0)
        #expect(model.isNotificationRead("n1", of: alice) == true)
        // Another notification is unaffected.
        #expect(model.apply(follow("n2", at: 2)).pushes.count == 1)
        #expect(model.counts(of: alice).unreadNotifications == 1)
    }

    @Test func readAllWatermarkCoversLaterArrivingOlderNotification() {
        var model = modelWithDevice()
        #expect(model.apply(readState("ra", .notificationsReadAll, at: 10)).pushes.isEmpty)
        let older = model.apply(follow("n-old", at: 5))
        #expect(older.pushes.isEmpty)
        #expect(model.isNotificationRead("n-old", of: alice) == true)
        let atWatermark = model.apply(follow("n-eq", at: 10))
        #expect(atWatermark.pushes.isEmpty)
        let newer = model.apply(follow("n-new", at: 15))
        #expect(newer.pushes.count == 1)
        #expect(model.counts(of: alice) == Counts(unreadNotifications: 1, unseenNotifications: 1))
    }

    @Test func readAllReadsOnlyUpToUntil() {
        var model = modelWithDevice()
        _ = model.apply(follow("n1", at: 1))
        _ = model.apply(follow("n2", at: 3))
        let outcome = model.apply(readState("ra", .notificationsReadAll, at: 9, until: 2))
        #expect(outcome.pushes.count == 1)
        #expect(outcome.pushes[0].kind == .badgeOnly)
        #expect(outcome.pushes[0].badge == 1)
        #expect(model.badgeVersion(of: alice) == 3)
        // An older watermark changes nothing and sends nothing.
        let stale = model.apply(readState("ra-old", .notificationsReadAll, at: 9, until: 1))
        #expect(stale.pushes.isEmpty)
        #expect(!stale.changed)
        #expect(model.badgeVersion(of: alice) == 3)
    }

    @Test func openedIsNotRead() {
        var model = modelWithDevice()
        _ = model.apply(follow("n1", at: 1))
        let opened = model.apply(readState("o1", .notificationsOpened, at: 2))
        #expect(opened.pushes.count == 1)
        #expect(opened.pushes[0].badge == 0)
        #expect(model.counts(of: alice) == Counts(unreadNotifications: 1, unseenNotifications: 0, unreadMessages: 0))
        #expect(model.isNotificationSeen("n1", of: alice) == true)
        #expect(model.isNotificationRead("n1", of: alice) == false)
        // A notification that occurred before the opened watermark arrives seen but unread: still an alert.
        let late = model.apply(follow("n0", at: 0))
        #expect(late.pushes.count == 1)
        #expect(late.pushes[0].badge == 0)
        #expect(model.counts(of: alice) == Counts(unreadNotifications: 2, unseenNotifications: 0))
        // Reading a seen notification lowers unread only.
        _ = model.apply(readState("r1", .notificationRead, at: 3, ids: ["n1"]))
        #expect(model.counts(of: alice) == Counts(unreadNotifications: 1, unseenNotifications: 0))
        // Opening again without new notifications changes nothing.
        #expect(model.apply(readState("o2", .notificationsOpened, at: 1)).pushes.isEmpty)
    }

    @Test func unreadPolicyCountsSeenNotifications() {
        var model = modelWithDevice(policy: .unread)
        _ = model.apply(follow("n1", at: 1))
        _ = model.apply(message("m1", at: 2))
        let opened = model.apply(readState("o1", .notificationsOpened, at: 3))
        // Counts changed (unseen), so a badge-only push goes out, but the unread badge stays.
        #expect(opened.pushes.count == 1)
        #expect(opened.pushes[0].badge == 2)
        #expect(model.badge(of: alice) == 2)
        #expect(BadgePolicy.unseen.badge(for: model.counts(of: alice), badgeEnabled: true) == 1)
        #expect(BadgePolicy.badge(counts: model.counts(of: alice), policy: .unread, badgeEnabled: false) == 0)
    }

    @Test func messagesAndConversationReadWithDefaultUntil() {
        var model = modelWithDevice()
        #expect(model.apply(message("m1", at: 1)).pushes.count == 1)
        #expect(model.apply(message("m2", at: 3)).pushes.count == 1)
        #expect(model.apply(message("m3", at: 1, conversation: "conv-2")).pushes.count == 1)
        #expect(model.counts(of: alice).unreadMessages == 3)
        // until defaults to occurred_at (2): m1 read, m2 not, other conversations untouched.
        let read = model.apply(readState("cr", .conversationRead, at: 2, conversation: "conv-1"))
        #expect(read.pushes.count == 1)
        #expect(read.pushes[0].badge == 2)
        #expect(model.counts(of: alice).unreadMessages == 2)
        // A message the watermark covers arrives read, without alert or version change.
        let version = model.badgeVersion(of: alice)
        #expect(model.apply(message("m0", at: 0)).pushes.isEmpty)
        #expect(model.badgeVersion(of: alice) == version)
        #expect(model.counts(of: alice).unreadMessages == 2)
        // An explicit until.
        _ = model.apply(readState("cr2", .conversationRead, at: 2, until: 3, conversation: "conv-1"))
        #expect(model.counts(of: alice).unreadMessages == 1)
        // Reading a conversation without messages changes no counts: nothing is sent.
        #expect(model.apply(readState("cr3", .conversationRead, at: 9, conversation: "empty")).pushes.isEmpty)
    }

    @Test func selfActionDoesNothing() {
        var model = modelWithDevice()
        let me = EventActor(id: alice, name: "Alice")
        let outcome = model.apply(follow("self", at: 1, actor: me))
        #expect(outcome.pushes.isEmpty)
        #expect(!outcome.changed)
        var selfMessage = message("self-m", at: 2)
        selfMessage.actor = me
        #expect(model.apply(selfMessage).pushes.isEmpty)
        #expect(model.counts(of: alice) == .zero)
        #expect(model.badgeVersion(of: alice) == 0)
        #expect(model.isNotificationRead("self", of: alice) == nil)
    }

    @Test func duplicateIDHasTheEffectOfOne() {
        var model = modelWithDevice()
        #expect(model.apply(follow("n1", at: 1)).pushes.count == 1)
        let again = model.apply(follow("n1", at: 2))
        #expect(again.isDuplicate)
        #expect(again.pushes.isEmpty)
        #expect(!again.changed)
        // Idempotency is global by event id, whatever the recipient or type.
        #expect(model.apply(follow("n1", at: 3, to: "u-carol")).isDuplicate)
        #expect(model.apply(readState("n1", .notificationsReadAll, at: 9)).isDuplicate)
        #expect(model.counts(of: alice).unreadNotifications == 1)
        #expect(model.badgeVersion(of: alice) == 1)
        // A duplicate device registration sends no second badge push.
        #expect(model.apply(register("reg-a", token: tokenA)).pushes.isEmpty)
        #expect(model.hasApplied(eventID: "reg-a"))
    }

    @Test func notificationReadTwiceSendsOnce() {
        var model = modelWithDevice()
        _ = model.apply(follow("n1", at: 1))
        #expect(model.apply(readState("r1", .notificationRead, at: 2, ids: ["n1"])).pushes.count == 1)
        let second = model.apply(readState("r2", .notificationRead, at: 3, ids: ["n1"]))
        #expect(second.pushes.isEmpty)
        #expect(!second.changed)
        #expect(model.badgeVersion(of: alice) == 2)
    }

    @Test func previewsOnlyChangeSendsNothing() {
        var model = modelWithDevice()
        _ = model.apply(follow("n1", at: 1))
        let outcome = model.apply(preferences("p1", at: 2, previews: false))
        #expect(outcome.pushes.isEmpty)
        #expect(outcome.changed)
        #expect(model.badgeVersion(of: alice) == 1)
        #expect(!model.previews(of: alice))
        let alert = model.apply(message("m1", at: 3))
        #expect(alert.pushes.first?.previews == false)
    }

    @Test func disablingTheBadgeBumpsTheVersionAndZeroesTheBadge() {
        var model = modelWithDevice()
        _ = model.apply(follow("n1", at: 1))
        let off = model.apply(preferences("p1", at: 2, badgeEnabled: false))
        #expect(off.pushes.count == 1)
        #expect(off.pushes[0].kind == .badgeOnly)
        #expect(off.pushes[0].badge == 0)
        #expect(off.pushes[0].counts.unreadNotifications == 1)
        #expect(off.pushes[0].badgeVersion == 2)
        #expect(model.badge(of: alice) == 0)
        #expect(!model.badgeEnabled(of: alice))
        // Setting the same value again changes nothing.
        let same = model.apply(preferences("p2", at: 3, badgeEnabled: false))
        #expect(same.pushes.isEmpty)
        #expect(model.badgeVersion(of: alice) == 2)
        // Later alerts carry badge 0; read changes still push (counts changed) with badge 0.
        #expect(model.apply(follow("n2", at: 4)).pushes.first?.badge == 0)
        let read = model.apply(readState("r", .notificationRead, at: 5, ids: ["n1"]))
        #expect(read.pushes.first?.badge == 0)
        #expect(read.pushes.first?.badgeVersion == 4)
        let on = model.apply(preferences("p3", at: 6, badgeEnabled: true, previews: false))
        #expect(on.pushes.first?.badge == 1)
        #expect(model.badgeVersion(of: alice) == 5)
    }

    @Test func deviceMovesBetweenUsers() {
        var model = modelWithDevice()
        let carol = "u-carol"
        let moved = model.apply(register("reg-c", token: tokenA, for: carol, provider: .fcm))
        #expect(moved.pushes.map(\.recipient) == [carol])
        #expect(model.activeDevices(of: alice).isEmpty)
        #expect(
            model.activeDevices(of: carol) == [
                RegisteredDevice(token: tokenA, provider: .fcm, environment: .production)
            ])
        #expect(model.owner(ofToken: tokenA) == carol)
        #expect(model.apply(follow("n1", at: 1)).pushes.isEmpty)
        let carolAlert = model.apply(follow("n2", at: 1, to: carol))
        #expect(carolAlert.pushes.map(\.token) == [tokenA])
        #expect(carolAlert.pushes.first?.provider == .fcm)
        // Alice cannot unregister a token she no longer holds.
        let denied = model.apply(
            Event(
                id: "un-a", type: .deviceUnregistered, recipient: alice, occurredAt: at(2),
                device: DeviceInfo(token: tokenA)))
        #expect(!denied.changed)
        #expect(model.owner(ofToken: tokenA) == carol)
        let unregistered = model.apply(
            Event(
                id: "un-c", type: .deviceUnregistered, recipient: carol, occurredAt: at(2),
                device: DeviceInfo(token: tokenA)))
        #expect(unregistered.changed)
        #expect(unregistered.pushes.isEmpty)
        #expect(model.activeDevices(of: carol).isEmpty)
        #expect(model.apply(follow("n3", at: 3, to: carol)).pushes.isEmpty)
    }

    @Test func watermarksDoNotDependOnOrder() {
        let events = [
            follow("n1", at: 1), follow("n2", at: 5), message("m1", at: 2), message("m2", at: 6),
            readState("ra", .notificationsReadAll, at: 9, until: 3),
            readState("cr", .conversationRead, at: 9, until: 4, conversation: "conv-1"),
            readState("op", .notificationsOpened, at: 9, until: 6),
            readState("nr", .notificationRead, at: 9, ids: ["n2"]),
        ]
        var forward = InboxModel()
        var backward = InboxModel()
        for event in events { _ = forward.apply(event) }
        for event in events.reversed() { _ = backward.apply(event) }
        #expect(forward.counts(of: alice) == backward.counts(of: alice))
        #expect(forward.counts(of: alice) == Counts(unreadNotifications: 0, unseenNotifications: 0, unreadMessages: 1))
    }

    @Test func unknownUserHasDefaults() {
        let model = InboxModel()
        #expect(model.counts(of: "nobody") == .zero)
        #expect(model.badge(of: "nobody") == 0)
        #expect(model.badgeVersion(of: "nobody") == 0)
        #expect(model.activeDevices(of: "nobody").isEmpty)
        #expect(model.badgeEnabled(of: "nobody"))
        #expect(model.previews(of: "nobody"))
    }

    @Test func manyNotificationsCarryTheTrueCount() {
        var model = modelWithDevice()
        var last = 0
        for index in 1...120 {
            last = model.apply(follow("n\(index)", at: Int64(index))).pushes.last?.badge ?? -1
        }
        #expect(last == 120)
        #expect(model.badgeVersion(of: alice) == 120)
    }
}
