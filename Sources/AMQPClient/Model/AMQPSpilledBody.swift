#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A message body longer than its consumer keeps in memory (``AMQPMessageHandler/maxBodyBytes``), written to a
/// file as it arrived: the body is kept, whole, for whoever needs it once (a worker parks such a message with its
/// original body), while memory holds none of it.
///
/// The file is unlinked as soon as it is created, so it lives exactly as long as this object: closing it (when the
/// last reference goes) frees its space, and a process that dies leaves nothing behind.
public final class AMQPSpilledBody: Sendable {
    /// The body's length in bytes.
    public let count: Int
    private let descriptor: Int32

    /// Writes `bytes` to a new unlinked file in `directory`; nil when that fails (no space, no directory).
    init?(_ bytes: UnsafeRawBufferPointer, directory: String) {
        var template = Array((directory + "/badgepipe-body-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { return nil }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        var written = 0
        while written < bytes.count {
            let result = write(descriptor, bytes.baseAddress! + written, bytes.count - written)
            if result < 0, errno == EINTR { continue }
            guard result > 0 else {
                close(descriptor)
                return nil
            }
            written += result
        }
        self.descriptor = descriptor
        self.count = bytes.count
    }

    deinit { close(descriptor) }

    /// The body, read back into memory.
    public func read() throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        try bytes.withUnsafeMutableBytes { buffer in
            while done < count {
                let result = pread(descriptor, buffer.baseAddress! + done, count - done, off_t(done))
                if result < 0, errno == EINTR { continue }
                guard result > 0 else {
                    throw AMQPError(.library, "reading a spilled message body back failed (errno \(errno))")
                }
                done += result
            }
        }
        return bytes
    }
}
