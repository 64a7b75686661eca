/// The versions of this build of IMCodec: the library's release and the wire schema it reads and writes.
///
/// `imcodec --version` prints them. ``version`` is raised with every release (semantic versioning:
/// a release that breaks source compatibility raises the major number); ``schemaVersion`` is the
/// `schema_version` this library writes in every ``Frame`` and changes only when `Schemas/` gains a
/// new version.
///
/// (Not `IMCodecVersion`: Swift 6.3's swift-symbolgraph-extract, which DocC reads, leaves out a type
/// whose name is the module's name followed by `Version`.)
public enum IMCodecRelease {
    /// The library's version, `MAJOR.MINOR.PATCH`.
    public static let version = "0.1.0"

    /// The protobuf package of the schema (`Schemas/imcodec/v1`).
    public static let schemaPackage = "imcodec.v1"

    /// The schema version this library writes (``Frame/currentSchemaVersion``).
    public static let schemaVersion: UInt32 = Frame.currentSchemaVersion

    /// One line for people: `IMCodec 0.1.0, schema imcodec.v1 (schema_version 2)`.
    public static var description: String {
        "IMCodec \(version), schema \(schemaPackage) (schema_version \(schemaVersion))"
    }
}
