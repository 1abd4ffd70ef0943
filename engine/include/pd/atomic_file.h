// Output files that are either the old file or the whole new one, never a cut mix: the text
// goes to a temporary file beside the target, which replaces it by rename(2) only once it is
// complete and flushed to disk. A run killed mid-write leaves the old file as it was.
#pragma once

#include <fstream>
#include <string>

namespace pd {

class AtomicFile {
  public:
    // Opens the temporary file; throws Error naming `path` when its folder cannot take it.
    explicit AtomicFile(const std::string& path);
    // Not committed: the temporary file is removed and the target left as it was.
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    std::ostream& stream() { return out_; }
    // Flushes, syncs and renames over the target; throws Error naming the path on failure.
    void commit();

  private:
    std::string path_;
    std::string temp_path_;
    std::ofstream out_;
    bool committed_ = false;
};

// Throws Error naming `path` (and `what` it is for, e.g. "--trace") if a file could not be
// written there: a missing or read-only folder, or a folder in the file's place. Checked
// before a run, so a long run does not end with nowhere to put its results.
void check_output_path(const std::string& path, const std::string& what);

}  // namespace pd
