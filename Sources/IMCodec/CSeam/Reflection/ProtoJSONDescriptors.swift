internal import CIMCodecRuntime
internal import CIMCodecSchemas
internal import CProtobufC

// MARK: - Descriptor metadata shared by the printer and the parser

/// What the JSON mapping needs to know about one value slot: a singular field, one element of a
/// repeated field, or a map entry's key or value.
struct ProtoJSONValueKind {
    let type: ProtobufCType
    /// A schema `string` stored as PROTOBUF_C_TYPE_BYTES (see imcodec_string_field.h).
    let isUTF8Bytes: Bool
    let message: UnsafePointer<ProtobufCMessageDescriptor>?
    let enumeration: UnsafePointer<ProtobufCEnumDescriptor>?

    init(_ field: UnsafePointer<ProtobufCFieldDescriptor>) {
        type = field.pointee.type
        isUTF8Bytes = imcodec_field_is_utf8_bytes(field) != 0
        message =
            type == PROTOBUF_C_TYPE_MESSAGE
            ? field.pointee.descriptor?.assumingMemoryBound(to: ProtobufCMessageDescriptor.self) : nil
        enumeration =
            type == PROTOBUF_C_TYPE_ENUM
            ? field.pointee.descriptor?.assumingMemoryBound(to: ProtobufCEnumDescriptor.self) : nil
    }

    /// Bytes one value takes in a protobuf-c struct or repeated array.
    var size: Int {
        switch type {
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64,
            PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64, PROTOBUF_C_TYPE_DOUBLE:
            8
        case PROTOBUF_C_TYPE_STRING, PROTOBUF_C_TYPE_MESSAGE:
            MemoryLayout<UnsafeRawPointer>.size
        case PROTOBUF_C_TYPE_BYTES:
            MemoryLayout<ProtobufCBinaryData>.size
        default:
            4  // 32-bit integers, float, enum (int), bool (protobuf_c_boolean is int)
        }
    }

    /// Whether the value is a JSON string holding text (a `string` field).
    var isText: Bool { type == PROTOBUF_C_TYPE_STRING || isUTF8Bytes }

    /// The schema's name for the type, for error messages.
    var typeName: String {
        switch type {
        case PROTOBUF_C_TYPE_INT32: "int32"
        case PROTOBUF_C_TYPE_SINT32: "sint32"
        case PROTOBUF_C_TYPE_SFIXED32: "sfixed32"
        case PROTOBUF_C_TYPE_INT64: "int64"
        case PROTOBUF_C_TYPE_SINT64: "sint64"
        case PROTOBUF_C_TYPE_SFIXED64: "sfixed64"
        case PROTOBUF_C_TYPE_UINT32: "uint32"
        case PROTOBUF_C_TYPE_FIXED32: "fixed32"
        case PROTOBUF_C_TYPE_UINT64: "uint64"
        case PROTOBUF_C_TYPE_FIXED64: "fixed64"
        case PROTOBUF_C_TYPE_FLOAT: "float"
        case PROTOBUF_C_TYPE_DOUBLE: "double"
        case PROTOBUF_C_TYPE_BOOL: "bool"
        case PROTOBUF_C_TYPE_ENUM: enumeration.map { String(cString: $0.pointee.name) } ?? "enum"
        case PROTOBUF_C_TYPE_STRING: "string"
        case PROTOBUF_C_TYPE_BYTES: isUTF8Bytes ? "string" : "bytes"
        case PROTOBUF_C_TYPE_MESSAGE: message.map { String(cString: $0.pointee.name) } ?? "message"
        default: "unknown type"
        }
    }
}

/// One field of a message as the JSON mapping sees it.
struct ProtoJSONField {
    let descriptor: UnsafePointer<ProtobufCFieldDescriptor>
    let number: UInt32
    /// The name in the schema (`client_msg_id`).
    let protoName: [UInt8]
    /// protobuf's ToJsonName of it (`clientMsgId`).
    let jsonName: [UInt8]
    let label: ProtobufCLabel
    let isOneof: Bool
    let offset: Int
    let quantifierOffset: Int
    let value: ProtoJSONValueKind
    /// For a map field: its entry's key and value (the field itself is a repeated entry message).
    let mapKey: ProtoJSONValueKind?
    let mapValue: ProtoJSONValueKind?
    let mapEntry: UnsafePointer<ProtobufCMessageDescriptor>?
    let mapKeyOffset: Int
    let mapValueOffset: Int

    var isRepeated: Bool { label == PROTOBUF_C_LABEL_REPEATED }
    var isMap: Bool { mapEntry != nil }
    var protoNameString: String { String(decoding: protoName, as: UTF8.self) }
}

/// The fields of one message type, in field-number order.
final class ProtoJSONMessageInfo {
    let descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    let fullName: String
    let fields: [ProtoJSONField]
    /// Field indices by json name and by schema name.
    private let byName: [ArraySlice<UInt8>: Int]

    /// The index in ``fields`` of the field with this json name or schema name.
    func field(named name: ArraySlice<UInt8>) -> Int? { byName[name] }

    init(_ descriptor: UnsafePointer<ProtobufCMessageDescriptor>) {
        self.descriptor = descriptor
        let fullName = String(cString: descriptor.pointee.name)
        self.fullName = fullName
        var fields: [ProtoJSONField] = []
        let count = Int(descriptor.pointee.n_fields)
        fields.reserveCapacity(count)
        for index in 0..<count {
            let field = descriptor.pointee.fields + index
            let protoName = Array(String(cString: field.pointee.name).utf8)
            var entry: UnsafePointer<ProtobufCMessageDescriptor>?
            var key: UnsafePointer<ProtobufCFieldDescriptor>?
            var value: UnsafePointer<ProtobufCFieldDescriptor>?
            if field.pointee.label == PROTOBUF_C_LABEL_REPEATED && field.pointee.type == PROTOBUF_C_TYPE_MESSAGE,
                let candidate = field.pointee.descriptor?.assumingMemoryBound(to: ProtobufCMessageDescriptor.self),
                let (k, v) = ProtoJSONMessageInfo.mapEntryFields(candidate, parent: fullName, field: protoName)
            {
                entry = candidate
                key = k
                value = v
            }
            fields.append(
                ProtoJSONField(
                    descriptor: field,
                    number: field.pointee.id,
                    protoName: protoName,
                    jsonName: ProtoJSONMessageInfo.jsonName(protoName),
                    label: field.pointee.label,
                    isOneof: field.pointee.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) != 0,
                    offset: Int(field.pointee.offset),
                    quantifierOffset: Int(field.pointee.quantifier_offset),
                    value: ProtoJSONValueKind(field),
                    mapKey: key.map(ProtoJSONValueKind.init),
                    mapValue: value.map(ProtoJSONValueKind.init),
                    mapEntry: entry,
                    mapKeyOffset: key.map { Int($0.pointee.offset) } ?? 0,
                    mapValueOffset: value.map { Int($0.pointee.offset) } ?? 0
                )
            )
        }
        fields.sort { $0.number < $1.number }
        self.fields = fields
        var byName: [ArraySlice<UInt8>: Int] = [:]
        for (index, field) in fields.enumerated() {
            byName[field.protoName[...]] = index
        }
        for (index, field) in fields.enumerated() {
            byName[field.jsonName[...]] = index  // a json name wins over another field's schema name
        }
        self.byName = byName
    }

    /// protobuf's ToJsonName: drops each `_` and upper-cases the character after it.
    static func jsonName(_ name: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(name.count)
        var capitalizeNext = false
        for c in name {
            if c == UInt8(ascii: "_") {
                capitalizeNext = true
            } else if capitalizeNext {
                result.append(c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z") ? c - 32 : c)
                capitalizeNext = false
            } else {
                result.append(c)
            }
        }
        return result
    }

    /// The key and value fields when `entry` is the map entry protoc makes for field `field` of
    /// `parent`: named `<parent>.<FieldNameInUpperCamel>Entry` with exactly key = 1 and value = 2.
    /// (protobuf-c descriptors do not flag map entries.)
    static func mapEntryFields(
        _ entry: UnsafePointer<ProtobufCMessageDescriptor>,
        parent: String,
        field: [UInt8]
    ) -> (UnsafePointer<ProtobufCFieldDescriptor>, UnsafePointer<ProtobufCFieldDescriptor>)? {
        guard entry.pointee.n_fields == 2 else { return nil }
        // protoc's MapEntryName: upper-case the first letter and each letter after '_', drop '_'.
        var name = Array(parent.utf8) + [UInt8(ascii: ".")]
        var capitalizeNext = true
        for c in field {
            if c == UInt8(ascii: "_") {
                capitalizeNext = true
            } else if capitalizeNext {
                name.append(c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z") ? c - 32 : c)
                capitalizeNext = false
            } else {
                name.append(c)
            }
        }
        name += Array("Entry".utf8)
        guard Array(String(cString: entry.pointee.name).utf8) == name else { return nil }
        var key: UnsafePointer<ProtobufCFieldDescriptor>?
        var value: UnsafePointer<ProtobufCFieldDescriptor>?
        for index in 0..<2 {
            let f = entry.pointee.fields + index
            let fieldName = String(cString: f.pointee.name)
            if f.pointee.id == 1 && fieldName == "key" { key = f }
            if f.pointee.id == 2 && fieldName == "value" { value = f }
        }
        guard let key, let value, key.pointee.label != PROTOBUF_C_LABEL_REPEATED,
            value.pointee.label != PROTOBUF_C_LABEL_REPEATED
        else { return nil }
        return (key, value)
    }
}

/// Message metadata, built once per type per call (no global state).
final class ProtoJSONDescriptors {
    private var cache: [UnsafeRawPointer: ProtoJSONMessageInfo] = [:]

    func info(_ descriptor: UnsafePointer<ProtobufCMessageDescriptor>) -> ProtoJSONMessageInfo {
        if let info = cache[UnsafeRawPointer(descriptor)] { return info }
        let info = ProtoJSONMessageInfo(descriptor)
        cache[UnsafeRawPointer(descriptor)] = info
        return info
    }
}
