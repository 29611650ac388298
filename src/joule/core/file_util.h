#pragma once
#include <fstream>
#include <string>

namespace joule {

// Whole file as bytes; throws BadInput "PATH: no such file" etc.
std::string read_file(const std::string& path);
// The file opened for binary reading, with the same errors as read_file.
std::ifstream open_file(const std::string& path);
// Writes via a temporary file and rename, so a failure never leaves half a file behind.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace joule
