import BadgeWire

/// Parses JSON text in tests.
func json(_ text: String) throws(JSONParseError) -> JSONValue {
    try JSONValue.parse(text)
}
