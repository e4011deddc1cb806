import Testing

@testable import BadgeCore

@Suite("Name-based UUIDs")
struct NameBasedUUIDTests {
    private static let dns: [UInt8] = [
        0x6B, 0xA7, 0xB8, 0x10, 0x9D, 0xAD, 0x11, 0xD1, 0x80, 0xB4, 0x00, 0xC0, 0x4F, 0xD4, 0x30, 0xC8,
    ]
    private static let url: [UInt8] = [
        0x6B, 0xA7, 0xB8, 0x11, 0x9D, 0xAD, 0x11, 0xD1, 0x80, 0xB4, 0x00, 0xC0, 0x4F, 0xD4, 0x30, 0xC8,
    ]

    @Test func uuidV5MatchesRFC4122() {
        // The DNS namespace 6ba7b810-9dad-11d1-80b4-00c04fd430c8 and "python.org" (a widely published vector).
        #expect(NameBasedUUID.make(namespace: Self.dns, name: "python.org") == "886313E1-3B8A-5372-9B90-0C9AEE199E5D")
        // The URL namespace 6ba7b811-…; answers from Python's uuid.uuid5.
        #expect(
            NameBasedUUID.make(namespace: Self.url, name: "https://www.example.com/")
                == "3D3ED9D2-AA3D-5FA6-90E8-ED662E90F559")
    }

    @Test func pushIDsAreKnownAnswers() {
        // The apns-id of a push is part of the contract: a re-send after a crash must carry the same one, also
        // across versions. Answers from Python's uuid.uuid5 in the push namespace.
        #expect(
            NameBasedUUID.alertID(eventID: "evt-1", token: "tok-aaaaaaaa") == "9D999D91-185B-5E6F-96C4-585D0D3AC599")
        #expect(
            NameBasedUUID.badgeID(user: "u", badgeVersion: 3, token: "tok-aaaaaaaa")
                == "D815D81A-11E3-5711-AB59-AC06CD88F47F")
        #expect(NameBasedUUID.alertID(eventID: "évt-ü", token: "tok") == "A5B2B278-3701-5187-8CB5-4167C57631D2")
        #expect(
            NameBasedUUID.make(namespace: NameBasedUUID.pushNamespace, name: "")
                == "491761D1-6754-5E15-B59C-92120A3946FD")
    }

    @Test func pushIDsAreStableAndDistinct() {
        let first = NameBasedUUID.alertID(eventID: "evt-1", token: "tok-aaaaaaaa")
        #expect(first == NameBasedUUID.alertID(eventID: "evt-1", token: "tok-aaaaaaaa"))
        #expect(first != NameBasedUUID.alertID(eventID: "evt-1", token: "tok-bbbbbbbb"))
        #expect(first != NameBasedUUID.alertID(eventID: "evt-2", token: "tok-aaaaaaaa"))
        #expect(first.count == 36)
        #expect(first == first.uppercased())
        let badge = NameBasedUUID.badgeID(user: "u", badgeVersion: 3, token: "tok-aaaaaaaa")
        #expect(badge != NameBasedUUID.badgeID(user: "u", badgeVersion: 4, token: "tok-aaaaaaaa"))
    }
}
