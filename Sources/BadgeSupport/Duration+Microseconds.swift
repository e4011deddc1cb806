extension Duration {
    /// The duration in whole microseconds (the unit of the store's times), rounded toward zero.
    public var wholeMicroseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
