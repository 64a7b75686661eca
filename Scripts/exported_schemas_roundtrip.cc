// Round-trips IMCodec's fixtures through C++ code that `protoc --cpp_out` made from the exported
// schemas (Scripts/export-schemas), with Debian's libprotobuf. Scripts/check_exported_schemas.py
// builds and runs it.
//
// stdin: one case per line, tab-separated: NAME, the fixture's bytes (NAME.binpb), the bytes a
// deterministic serializer must write for them (NAME.canonical.binpb, or NAME.binpb again), and
// the fixture's text form (NAME.txtpb) or "-" when it is not an imcodec.v1.Frame.
// For each case: the bytes parse as imcodec.v1.Frame (recursion limit 1000: one fixture nests 304
// levels, more than protobuf's default 100), serialize deterministically to the expected bytes
// and, for a text form, the text parses (TextFormat, the parser `protoc --encode` uses) to a
// Frame that serializes to the fixture's bytes and equals the parsed one (MessageDifferencer;
// NaN equal to NaN). Prints "PASS NAME" or "FAIL NAME: why" per case, then
// "cpp: N passed, M failed"; exit status 1 if any failed.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/field_comparator.h>
#include <google/protobuf/util/message_differencer.h>

#include "imcodec/v1/frame.pb.h"

namespace {

bool ReadFile(const std::string& path, std::string* out) {
    std::ifstream file(path, std::ios::binary);
    if (!file) return false;
    std::ostringstream buffer;
    buffer << file.rdbuf();
    *out = buffer.str();
    return true;
}

bool Parse(const std::string& bytes, imcodec::v1::Frame* frame) {
    google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                 static_cast<int>(bytes.size()));
    input.SetRecursionLimit(1000);
    return frame->ParseFromCodedStream(&input) && input.ConsumedEntireMessage();
}

std::string Deterministic(const imcodec::v1::Frame& frame) {
    std::string out;
    {
        google::protobuf::io::StringOutputStream stream(&out);
        google::protobuf::io::CodedOutputStream coded(&stream);
        coded.SetSerializationDeterministic(true);
        frame.SerializeToCodedStream(&coded);
    }
    return out;
}

// An empty string when the case passes, else why it failed.
std::string Check(const std::string& binpb, const std::string& expected_path, const std::string& txtpb) {
    std::string bytes, expected;
    if (!ReadFile(binpb, &bytes)) return "cannot read " + binpb;
    if (!ReadFile(expected_path, &expected)) return "cannot read " + expected_path;
    imcodec::v1::Frame frame;
    if (!Parse(bytes, &frame)) return "the bytes do not parse as imcodec.v1.Frame";
    if (Deterministic(frame) != expected) return "re-serialized bytes differ from " + expected_path;
    if (txtpb == "-") return "";
    std::string text;
    if (!ReadFile(txtpb, &text)) return "cannot read " + txtpb;
    imcodec::v1::Frame from_text;
    google::protobuf::TextFormat::Parser parser;
    parser.SetRecursionLimit(1000);
    if (!parser.ParseFromString(text, &from_text)) return "the text form does not parse";
    if (Deterministic(from_text) != bytes) return "the text form serializes to other bytes";
    google::protobuf::util::DefaultFieldComparator comparator;
    comparator.set_treat_nan_as_equal(true);
    google::protobuf::util::MessageDifferencer differencer;
    differencer.set_field_comparator(&comparator);
    std::string report;
    differencer.ReportDifferencesToString(&report);
    if (!differencer.Compare(from_text, frame)) return "the text form and the bytes differ: " + report;
    return "";
}

}  // namespace

int main() {
    GOOGLE_PROTOBUF_VERIFY_VERSION;
    int passed = 0, failed = 0;
    std::string line;
    while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        std::istringstream fields(line);
        std::string name, binpb, expected, txtpb;
        std::getline(fields, name, '\t');
        std::getline(fields, binpb, '\t');
        std::getline(fields, expected, '\t');
        std::getline(fields, txtpb, '\t');
        std::string why = Check(binpb, expected, txtpb.empty() ? "-" : txtpb);
        if (why.empty()) {
            ++passed;
            std::cout << "PASS " << name << "\n";
        } else {
            ++failed;
            std::cout << "FAIL " << name << ": " << why << "\n";
        }
    }
    std::cout << "cpp: " << passed << " passed, " << failed << " failed" << std::endl;
    return failed == 0 && passed > 0 ? 0 : 1;
}
