#include "pd/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "pd/error.h"

namespace pd {

namespace fs = std::filesystem;

namespace {

// A new, empty file beside `path`, under a name no one else holds (O_EXCL), with the mode
// any new file gets under the umask; its name, or throws naming the path and why.
std::string make_temp_beside(const std::string& path, const std::string& what) {
    const fs::path target(path);
    if (!target.has_filename())
        throw Error(what + "'" + path + "' names a folder, not a file", __FILE__, __LINE__);
    std::error_code ec;
    if (fs::is_directory(target, ec))
        throw Error(what + "'" + path + "' is a folder", __FILE__, __LINE__);
    const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
    static std::atomic<unsigned> counter{0};
    std::random_device entropy;
    for (int attempt = 0;; ++attempt) {
        const std::string name =
            (folder /
             ("." + target.filename().string() + "." + std::to_string(::getpid()) + "-" +
              std::to_string(counter.fetch_add(1)) + "-" + std::to_string(entropy()) + ".tmp"))
                .string();
        const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            ::close(fd);
            return name;
        }
        if (errno != EEXIST || attempt == 100)
            throw Error(what + "cannot write '" + path + "': " + std::strerror(errno) +
                            " (in folder '" + folder.string() + "')",
                        __FILE__, __LINE__);
    }
}

}  // namespace

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
    temp_path_ = make_temp_beside(path, "");
    out_.open(temp_path_, std::ios::binary | std::ios::trunc);
    if (!out_) {
        std::remove(temp_path_.c_str());
        throw Error("cannot write '" + path + "'", __FILE__, __LINE__);
    }
}

AtomicFile::~AtomicFile() {
    if (committed_) return;
    out_.close();
    std::remove(temp_path_.c_str());
}

void AtomicFile::commit() {
    out_.flush();
    const bool written = static_cast<bool>(out_);
    out_.close();
    if (!written || out_.fail())
        throw Error("failed writing '" + path_ + "' (disk full?); the old file is unchanged",
                    __FILE__, __LINE__);
    // On disk before the rename, so a crash after it cannot leave an empty file in its place.
    if (const int fd = ::open(temp_path_.c_str(), O_RDONLY); fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
    if (std::rename(temp_path_.c_str(), path_.c_str()) != 0)
        throw Error("cannot replace '" + path_ + "': " + std::strerror(errno), __FILE__, __LINE__);
    committed_ = true;
}

void check_output_path(const std::string& path, const std::string& what) {
    const std::string temp = make_temp_beside(path, what.empty() ? "" : what + ": ");
    std::remove(temp.c_str());
}

}  // namespace pd
