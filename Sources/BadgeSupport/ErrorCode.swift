/// The code of an error of type `Domain`: a typed, machine-readable name (its ``rawValue``, e.g. `lease_lost`), the
/// one shape every BadgePipe error's `Code` has (`public typealias Code = ErrorCode<StoreError>`).
///
/// Each error type names its codes in an extension (`extension ErrorCode<StoreError> { static var leaseLost … }`),
/// so a code of one error type is never mistaken for another's with the same name, and the shape is written once.
/// Codes compare by name; a code made from a name the type does not list (a database's `sqlstate_22021`) is as
/// good as a listed one.
public struct ErrorCode<Domain>: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The code's name, as logs, metrics and parked messages show it.
    public let rawValue: String

    /// A code by name.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// A code by name.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The code's name.
    public var description: String { rawValue }
}
