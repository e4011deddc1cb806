import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP port on 127.0.0.1 that a child process can listen on: below Linux's ephemeral range (32768–60999), so that
/// no outgoing connection of a busy test run takes it meanwhile, and free when picked (checked by binding it).
func freeListenPort() throws -> Int {
    for _ in 0..<100 {
        let port = Int.random(in: 20_000...32_000)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FleetError("socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        close(fd)
        if bound == 0 { return port }
    }
    throw FleetError("no free port found")
}
