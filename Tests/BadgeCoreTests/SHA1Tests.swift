import Testing

@testable import BadgeCore

@Suite("SHA-1 and name-based UUIDs")
struct SHA1Tests {
    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    @Test(arguments: [
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        ("The quick brown fox jumps over the lazy dog", "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"),
    ])
    func knownVectors(message: String, digest: String) {
        #expect(hex(SHA1.digest(Array(message.utf8))) == digest)
    }

    @Test func millionAs() {
        let digest = SHA1.digest([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
        #expect(hex(digest) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    @Test func paddingBoundaries() {
        // 55, 56 and 64 bytes cross the one-block / two-block padding boundary.
        #expect(hex(SHA1.digest([UInt8](repeating: 0x61, count: 55))) == "c1c8bbdc22796e28c0e15163d20899b65621d65a")
        #expect(hex(SHA1.digest([UInt8](repeating: 0x61, count: 56))) == "c2db330f6083854c99d4b5bfb6e8f29f201be699")
        #expect(hex(SHA1.digest([UInt8](repeating: 0x61, count: 64))) == "0098ba824b5c16427bd7a1122a5a442a25ec644d")
    }

    @Test func uuidV5MatchesRFC4122() {
        // The DNS namespace 6ba7b810-9dad-11d1-80b4-00c04fd430c8 and "python.org" (a widely published vector).
        let dns: [UInt8] = [
            0x6B, 0xA7, 0xB8, 0x10, 0x9D, 0xAD, 0x11, 0xD1, 0x80, 0xB4, 0x00, 0xC0, 0x4F, 0xD4, 0x30, 0xC8,
        ]
        #expect(NameBasedUUID.make(namespace: dns, name: "python.org") == "886313E1-3B8A-5372-9B90-0C9AEE199E5D")
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
