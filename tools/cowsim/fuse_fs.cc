#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 12)
#include "fuse_fs.hh"

#include <fuse3/fuse.h>
#include <fuse3/fuse_lowlevel.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace cowsim {
namespace {

constexpr std::string_view stats_name = ".stats";
constexpr std::string_view control_name = ".control";

struct Handle {
    enum class Kind { disk, stats, control } kind;
    CowDisk* disk = nullptr;
    std::string content; // the stats snapshot taken at open
};

Simulator& sim() {
    return *static_cast<Simulator*>(fuse_get_context()->private_data);
}

Handle& handle(const fuse_file_info* fi) {
    return *reinterpret_cast<Handle*>(fi->fh);
}

std::string_view entry_name(const char* path) {
    std::string_view p(path);
    if (!p.empty() && p.front() == '/')
        p.remove_prefix(1);
    return p;
}

// A present disk by path; vanished disks are gone from the directory.
CowDisk* disk_at(const char* path) {
    auto* disk = sim().find(entry_name(path));
    return disk && disk->present() ? disk : nullptr;
}

void* fs_init(fuse_conn_info* conn, fuse_config* cfg) {
    // Loop devices with direct I/O submit many requests at once; let them through.
    conn->max_background = 64;
    conn->congestion_threshold = 48;
    // The largest request the kernel takes (fs.fuse.max_pages_limit, 256 pages).
    conn->max_write = 1024 * 1024;
    cfg->attr_timeout = 0; // st_blocks follows allocation
    cfg->negative_timeout = 0;
    return fuse_get_context()->private_data;
}

int fs_getattr(const char* path, struct stat* st, fuse_file_info*) {
    std::memset(st, 0, sizeof *st);
    const auto name = entry_name(path);
    st->st_uid = ::getuid();
    st->st_gid = ::getgid();
    if (name.empty()) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return 0;
    }
    st->st_nlink = 1;
    if (name == stats_name) {
        st->st_mode = S_IFREG | 0444;
        return 0;
    }
    if (name == control_name) {
        st->st_mode = S_IFREG | 0200;
        return 0;
    }
    auto* disk = disk_at(path);
    if (!disk)
        return -ENOENT;
    st->st_mode = S_IFREG | 0600;
    st->st_size = static_cast<off_t>(disk->size_bytes());
    st->st_blocks = static_cast<blkcnt_t>(disk->allocated_bytes() / 512);
    return 0;
}

int fs_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t, fuse_file_info*,
               fuse_readdir_flags) {
    if (!entry_name(path).empty())
        return -ENOTDIR;
    fill(buf, ".", nullptr, 0, fuse_fill_dir_flags{});
    fill(buf, "..", nullptr, 0, fuse_fill_dir_flags{});
    fill(buf, stats_name.data(), nullptr, 0, fuse_fill_dir_flags{});
    fill(buf, control_name.data(), nullptr, 0, fuse_fill_dir_flags{});
    for (const auto& disk : sim().disks())
        if (disk->present())
            fill(buf, disk->name().c_str(), nullptr, 0, fuse_fill_dir_flags{});
    return 0;
}

int fs_open(const char* path, fuse_file_info* fi) {
    const auto name = entry_name(path);
    const int access = fi->flags & O_ACCMODE;
    auto h = std::make_unique<Handle>();
    if (name == stats_name) {
        if (access != O_RDONLY)
            return -EACCES;
        h->kind = Handle::Kind::stats;
        h->content = sim().stats().dump(2) + "\n";
    } else if (name == control_name) {
        if (access == O_RDONLY)
            return -EACCES;
        h->kind = Handle::Kind::control;
    } else {
        h->kind = Handle::Kind::disk;
        h->disk = disk_at(path);
        if (!h->disk)
            return -ENOENT;
    }
    // No page cache: every read and write reaches the simulator, as on a backend.
    fi->direct_io = 1;
    fi->keep_cache = 0;
    fi->fh = reinterpret_cast<uint64_t>(h.release());
    return 0;
}

int fs_release(const char*, fuse_file_info* fi) {
    delete &handle(fi);
    return 0;
}

int fs_read(const char*, char* buf, size_t len, off_t offset, fuse_file_info* fi) {
    auto& h = handle(fi);
    switch (h.kind) {
    case Handle::Kind::disk:
        return static_cast<int>(h.disk->read(buf, len, static_cast<uint64_t>(offset)));
    case Handle::Kind::stats: {
        const auto off = static_cast<size_t>(offset);
        if (off >= h.content.size())
            return 0;
        const size_t n = std::min(len, h.content.size() - off);
        std::memcpy(buf, h.content.data() + off, n);
        return static_cast<int>(n);
    }
    case Handle::Kind::control:
        return -EBADF;
    }
    return -EBADF;
}

int fs_write(const char*, const char* buf, size_t len, off_t offset, fuse_file_info* fi) {
    auto& h = handle(fi);
    switch (h.kind) {
    case Handle::Kind::disk:
        return static_cast<int>(h.disk->write(buf, len, static_cast<uint64_t>(offset)));
    case Handle::Kind::control:
        if (auto applied = sim().control(std::string_view(buf, len)); !applied) {
            std::fprintf(stderr, "cowsim: control: %s\n", applied.error().message.c_str());
            return applied.error().err;
        }
        return static_cast<int>(len);
    case Handle::Kind::stats:
        return -EBADF;
    }
    return -EBADF;
}

int fs_truncate(const char* path, off_t, fuse_file_info*) {
    // `echo cmd > .control` truncates first; disks keep their size.
    return entry_name(path) == control_name ? 0 : -EPERM;
}

int fs_fsync(const char*, int, fuse_file_info* fi) {
    auto& h = handle(fi);
    if (h.kind == Handle::Kind::disk)
        h.disk->flush();
    return 0;
}

} // namespace

int serve(Simulator& simulator, const std::string& mountpoint, unsigned threads) {
    fuse_operations ops{};
    ops.init = fs_init;
    ops.getattr = fs_getattr;
    ops.readdir = fs_readdir;
    ops.open = fs_open;
    ops.release = fs_release;
    ops.read = fs_read;
    ops.write = fs_write;
    ops.truncate = fs_truncate;
    ops.fsync = fs_fsync;

    char arg0[] = "cowsim";
    char opt_flag[] = "-o";
    char opts[] = "fsname=cowsim,subtype=cowsim,default_permissions";
    char* argv[] = {arg0, opt_flag, opts, nullptr};
    fuse_args args = FUSE_ARGS_INIT(3, argv);

    fuse* fs = fuse_new(&args, &ops, sizeof ops, &simulator);
    if (!fs) {
        std::fprintf(stderr, "cowsim: cannot set up FUSE\n");
        return 1;
    }
    if (fuse_mount(fs, mountpoint.c_str()) != 0) {
        std::fprintf(stderr, "cowsim: cannot mount at %s\n", mountpoint.c_str());
        fuse_destroy(fs);
        return 1;
    }
    fuse_session* session = fuse_get_session(fs);
    if (fuse_set_signal_handlers(session) != 0) {
        std::fprintf(stderr, "cowsim: cannot install signal handlers\n");
        fuse_unmount(fs);
        fuse_destroy(fs);
        return 1;
    }
    fuse_loop_config* loop = fuse_loop_cfg_create();
    fuse_loop_cfg_set_max_threads(loop, threads);
    fuse_loop_cfg_set_idle_threads(loop, threads);
    const int rc = fuse_loop_mt(fs, loop);
    fuse_loop_cfg_destroy(loop);
    fuse_remove_signal_handlers(session);
    fuse_unmount(fs);
    fuse_destroy(fs);
    return rc == 0 ? 0 : 1;
}

} // namespace cowsim
