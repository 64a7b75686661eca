internal import CIMCodecRuntime
internal import CIMCodecSchemas
internal import CProtobufC

/// Builds the engines' ``MessageSchema`` model from protobuf-c's descriptors, once, for every
/// message type of the schema (``IMCodecSchema/messageTypes`` and the types their fields reach).
///
/// The model is a global `let`: Swift initializes it on first use, exactly once, whichever thread
/// asks first, and it is immutable afterwards, so readers need no lock.
enum SchemaModel {
    /// The model of every message type, by the address of its protobuf-c descriptor.
    nonisolated(unsafe) private static let messages: [UnsafeRawPointer: MessageSchema] = {
        var builder = Builder()
        for type in IMCodecSchema.messageTypes { _ = builder.message(type._protobufCDescriptor.pointer) }
        return builder.messages
    }()

    /// The model of the message type `descriptor` describes.
    static func message(_ descriptor: _ProtobufCDescriptor) -> MessageSchema {
        guard let schema = messages[UnsafeRawPointer(descriptor.pointer)] else {
            preconditionFailure("SchemaModel: \(String(cString: descriptor.pointer.pointee.name)) is not in the schema")
        }
        return schema
    }

    private struct Builder {
        var messages: [UnsafeRawPointer: MessageSchema] = [:]
        var enums: [UnsafeRawPointer: EnumSchema] = [:]

        /// The model of `descriptor`, built with the types it reaches on first use.
        mutating func message(_ descriptor: UnsafePointer<ProtobufCMessageDescriptor>) -> MessageSchema {
            if let known = messages[UnsafeRawPointer(descriptor)] { return known }
            let fullName = String(cString: descriptor.pointee.name)
            let schema = MessageSchema(fullName: fullName)
            messages[UnsafeRawPointer(descriptor)] = schema  // before the fields: types may refer back
            var fields: [FieldSchema] = []
            for index in 0..<Int(descriptor.pointee.n_fields) {
                fields.append(field(descriptor.pointee.fields + index, parent: fullName))
            }
            schema.setFields(fields)
            return schema
        }

        private mutating func field(
            _ field: UnsafePointer<ProtobufCFieldDescriptor>,
            parent: String
        ) -> FieldSchema {
            let name = Array(String(cString: field.pointee.name).utf8)
            let isRepeated = field.pointee.label == PROTOBUF_C_LABEL_REPEATED
            var map: MapEntrySchema?
            if isRepeated && field.pointee.type == PROTOBUF_C_TYPE_MESSAGE,
                let entry = field.pointee.descriptor?.assumingMemoryBound(to: ProtobufCMessageDescriptor.self),
                let (key, value) = Self.mapEntryFields(entry, parent: parent, field: name)
            {
                map = MapEntrySchema(key: self.value(key), value: self.value(value))
            }
            let flags = field.pointee.flags
            return FieldSchema(
                number: field.pointee.id,
                name: name,
                isRepeated: isRepeated,
                isPacked: flags & UInt32(PROTOBUF_C_FIELD_FLAG_PACKED.rawValue) != 0,
                oneof: flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) != 0
                    ? Int(field.pointee.quantifier_offset) : nil,
                value: value(field),
                map: map
            )
        }

        private mutating func value(_ field: UnsafePointer<ProtobufCFieldDescriptor>) -> ValueSchema {
            let kind: FieldKind
            var message: MessageSchema?
            var enumeration: EnumSchema?
            switch field.pointee.type {
            case PROTOBUF_C_TYPE_INT32: kind = .int32
            case PROTOBUF_C_TYPE_SINT32: kind = .sint32
            case PROTOBUF_C_TYPE_SFIXED32: kind = .sfixed32
            case PROTOBUF_C_TYPE_INT64: kind = .int64
            case PROTOBUF_C_TYPE_SINT64: kind = .sint64
            case PROTOBUF_C_TYPE_SFIXED64: kind = .sfixed64
            case PROTOBUF_C_TYPE_UINT32: kind = .uint32
            case PROTOBUF_C_TYPE_FIXED32: kind = .fixed32
            case PROTOBUF_C_TYPE_UINT64: kind = .uint64
            case PROTOBUF_C_TYPE_FIXED64: kind = .fixed64
            case PROTOBUF_C_TYPE_FLOAT: kind = .float
            case PROTOBUF_C_TYPE_DOUBLE: kind = .double
            case PROTOBUF_C_TYPE_BOOL: kind = .bool
            case PROTOBUF_C_TYPE_STRING: kind = .string
            // A schema `string` stored as bytes (see imcodec_string_field.h) is a string.
            case PROTOBUF_C_TYPE_BYTES: kind = imcodec_field_is_utf8_bytes(field) != 0 ? .string : .bytes
            case PROTOBUF_C_TYPE_ENUM:
                kind = .enumeration
                enumeration = field.pointee.descriptor.map {
                    self.enumeration($0.assumingMemoryBound(to: ProtobufCEnumDescriptor.self))
                }
            default:
                kind = .message
                message = field.pointee.descriptor.map {
                    self.message($0.assumingMemoryBound(to: ProtobufCMessageDescriptor.self))
                }
            }
            return ValueSchema(kind: kind, message: message, enumeration: enumeration)
        }

        private mutating func enumeration(_ descriptor: UnsafePointer<ProtobufCEnumDescriptor>) -> EnumSchema {
            if let known = enums[UnsafeRawPointer(descriptor)] { return known }
            var values: [(name: [UInt8], number: Int32)] = []
            for index in 0..<Int(descriptor.pointee.n_values) {
                let value = descriptor.pointee.values[index]
                values.append((Array(String(cString: value.name).utf8), value.value))
            }
            let schema = EnumSchema(fullName: String(cString: descriptor.pointee.name), values: values)
            enums[UnsafeRawPointer(descriptor)] = schema
            return schema
        }

        /// The key and value fields when `entry` is the map entry protoc makes for field `field` of
        /// `parent`: named `<parent>.<FieldNameInUpperCamel>Entry` with exactly key = 1 and value = 2.
        /// (protobuf-c descriptors do not flag map entries.)
        private static func mapEntryFields(
            _ entry: UnsafePointer<ProtobufCMessageDescriptor>,
            parent: String,
            field: [UInt8]
        ) -> (UnsafePointer<ProtobufCFieldDescriptor>, UnsafePointer<ProtobufCFieldDescriptor>)? {
            guard entry.pointee.n_fields == 2 else { return nil }
            // protoc's MapEntryName: upper-case the first letter and each letter after '_', drop '_'.
            var name = Array(parent.utf8) + [UInt8(ascii: ".")]
            name += FieldSchema.camelCase(field, capitalizingFirst: true)
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
}

extension IMCodecMessage {
    /// The schema model of this message type (for the JSON and text-format engines, and, package
    /// access, the test support's wire variants).
    package static var messageSchema: MessageSchema { SchemaModel.message(_protobufCDescriptor) }
}
