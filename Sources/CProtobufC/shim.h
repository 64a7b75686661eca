// The system protobuf-c runtime (Debian: libprotobuf-c-dev), found through pkg-config.
#include <protobuf-c/protobuf-c.h>
