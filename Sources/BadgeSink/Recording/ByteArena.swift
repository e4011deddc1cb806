/// Append-only byte storage in 1 MiB chunks, so a million small blobs cost a few hundred allocations
/// and growing never copies what is already stored.
struct ByteArena: Sendable {
    /// The size of a regular chunk; a larger blob gets a chunk of its own.
    static let chunkSize = 1 << 20

    /// The chunks; only the last one is ever appended to.
    private(set) var chunks: [[UInt8]] = []

    /// Where a blob is stored.
    struct Location: Sendable {
        var chunk: UInt32
        var offset: UInt32
    }

    /// Stores `bytes` and returns where.
    mutating func append(_ bytes: [UInt8]) -> Location {
        let fits = self.chunks.last.map { $0.count + bytes.count <= Self.chunkSize } ?? false
        if !fits {
            if bytes.count >= Self.chunkSize {
                self.chunks.append(bytes)
                return Location(chunk: UInt32(self.chunks.count - 1), offset: 0)
            }
            var chunk: [UInt8] = []
            chunk.reserveCapacity(Self.chunkSize)
            self.chunks.append(chunk)
        }
        let last = self.chunks.count - 1
        let offset = self.chunks[last].count
        self.chunks[last].append(contentsOf: bytes)
        return Location(chunk: UInt32(last), offset: UInt32(offset))
    }

    /// Bytes stored, not counting unused chunk capacity.
    var byteCount: Int { self.chunks.reduce(0) { $0 + $1.count } }
}
