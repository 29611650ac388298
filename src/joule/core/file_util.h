#pragma once
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

namespace joule {

// Whole file as bytes; throws BadInput "PATH: no such file" etc.
std::string read_file(const std::string& path);
// The file opened for binary reading, with the same errors as read_file.
std::ifstream open_file(const std::string& path);
// Writes via a temporary file and rename, so a failure never leaves half a file behind.
void write_file_atomic(const std::string& path, const std::string& bytes);

// FNV-1a, 64 bits, of `n` bytes (continuing from `h`).
uint64_t fnv1a64(const void* data, size_t n, uint64_t h = 1469598103934665603ull);
// "fnv1a64:<16 hex digits>" of a file's bytes (read in blocks); BadInput when unreadable.
std::string file_checksum(const std::string& path);

}  // namespace joule
