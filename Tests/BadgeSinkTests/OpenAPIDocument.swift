import Foundation

/// The sink's OpenAPI document, read for the conformance tests, with a checker of values against its schemas
/// (the subset of JSON Schema 2020-12 the document uses: `$ref`, `type` with `null`, `enum`, `properties`,
/// `required`, `additionalProperties`, `items`, `oneOf`, `minimum`, `maximum`).
/// Immutable after init (the parsed JSON is only read), so shared between tasks.
struct OpenAPIDocument: @unchecked Sendable {
    let root: [String: Any]

    init(text: String) throws {
        guard let root = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw SinkAnswer.Failure(description: "the document is not a JSON object")
        }
        self.root = root
    }

    /// Every `METHOD path` the document describes.
    var operations: Set<String> {
        var result: Set<String> = []
        for (path, item) in self.root["paths"] as? [String: Any] ?? [:] {
            for method in (item as? [String: Any] ?? [:]).keys {
                result.insert("\(method.uppercased()) \(path)")
            }
        }
        return result
    }

    /// The response object for `status` of an operation, by exact status or its `4XX` / `5XX` range.
    func response(_ method: String, _ path: String, status: Int) -> [String: Any]? {
        guard let paths = self.root["paths"] as? [String: Any], let item = paths[path] as? [String: Any],
            let operation = item[method.lowercased()] as? [String: Any],
            let responses = operation["responses"] as? [String: Any]
        else { return nil }
        let found = responses[String(status)] ?? responses["\(status / 100)XX"]
        return (found as? [String: Any]).map(self.resolve)
    }

    /// Problems of `value` against `schema`; empty when it conforms.
    func problems(_ value: Any, _ schema: [String: Any], at location: String = "$") -> [String] {
        let schema = self.resolve(schema)
        var found: [String] = []
        if let options = schema["oneOf"] as? [[String: Any]] {
            let matching = options.filter { self.problems(value, $0, at: location).isEmpty }.count
            if matching != 1 {
                found.append("\(location): matches \(matching) of oneOf")
            }
        }
        if let types = schema["type"].map({ ($0 as? [String]) ?? [$0 as? String ?? ""] }) {
            if !types.contains(where: { Self.has(value, type: $0) }) {
                found.append("\(location): \(Self.describe(value)) is not \(types.joined(separator: " or "))")
                return found
            }
        }
        if let allowed = schema["enum"] as? [Any] {
            if !allowed.contains(where: { Self.equal($0, value) }) {
                found.append("\(location): \(Self.describe(value)) is not one of \(allowed)")
            }
        }
        if let number = value as? NSNumber, !(value is Bool) {
            if let minimum = schema["minimum"] as? Double, number.doubleValue < minimum {
                found.append("\(location): \(number) < \(minimum)")
            }
            if let maximum = schema["maximum"] as? Double, number.doubleValue > maximum {
                found.append("\(location): \(number) > \(maximum)")
            }
        }
        if let object = value as? [String: Any] {
            let properties = schema["properties"] as? [String: Any] ?? [:]
            for name in schema["required"] as? [String] ?? [] where object[name] == nil {
                found.append("\(location): no \(name)")
            }
            for (name, member) in object {
                if let property = properties[name] as? [String: Any] {
                    found += self.problems(member, property, at: "\(location).\(name)")
                } else if let additional = schema["additionalProperties"] as? [String: Any] {
                    found += self.problems(member, additional, at: "\(location).\(name)")
                } else if schema["additionalProperties"] as? Bool == false {
                    found.append("\(location): unexpected \(name)")
                }
            }
        }
        if let array = value as? [Any], let items = schema["items"] as? [String: Any] {
            for (index, item) in array.enumerated() {
                found += self.problems(item, items, at: "\(location)[\(index)]")
            }
        }
        return found
    }

    /// `object` with its `$ref` followed.
    func resolve(_ object: [String: Any]) -> [String: Any] {
        guard let reference = object["$ref"] as? String, reference.hasPrefix("#/") else { return object }
        var node: Any = self.root
        for part in reference.dropFirst(2).split(separator: "/") {
            node = (node as? [String: Any])?[String(part)] ?? [:]
        }
        return self.resolve(node as? [String: Any] ?? [:])
    }

    private static func has(_ value: Any, type: String) -> Bool {
        switch type {
        case "null": return value is NSNull
        case "object": return value is [String: Any]
        case "array": return value is [Any]
        case "string": return value is String
        case "boolean": return Self.isBool(value)
        case "integer":
            guard let number = value as? NSNumber, !Self.isBool(value) else { return false }
            return number.doubleValue.rounded() == number.doubleValue
        case "number": return value is NSNumber && !Self.isBool(value)
        default: return false
        }
    }

    private static func isBool(_ value: Any) -> Bool {
        // JSONSerialization's booleans are NSNumbers of type "c" (char); its numbers never are.
        guard let number = value as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    private static func equal(_ lhs: Any, _ rhs: Any) -> Bool {
        switch (lhs, rhs) {
        case (is NSNull, is NSNull): true
        case (let left as String, let right as String): left == right
        case (let left as NSNumber, let right as NSNumber): left == right
        default: false
        }
    }

    private static func describe(_ value: Any) -> String {
        let text = "\(value)"
        return text.count > 60 ? String(text.prefix(60)) + "…" : text
    }
}
