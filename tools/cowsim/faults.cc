#include "faults.hh"

#include <array>
#include <cerrno>

#include "base/units.hh"

namespace cowsim {

using prewarmd::Error;
using prewarmd::Result;

void FaultSet::add(const FaultRule& rule) {
    std::lock_guard lock(m_mutex);
    m_rules.push_back({rule, 0});
}

void FaultSet::clear() {
    std::lock_guard lock(m_mutex);
    m_rules.clear();
}

size_t FaultSet::size() const {
    std::lock_guard lock(m_mutex);
    return m_rules.size();
}

FaultSet::Verdict FaultSet::check(OpKind op, uint64_t offset, uint64_t len) {
    Verdict verdict;
    std::lock_guard lock(m_mutex);
    for (auto& armed : m_rules) {
        const auto& rule = armed.rule;
        if (rule.op != OpKind::any && rule.op != op)
            continue;
        if (armed.seen_bytes < rule.after_bytes) {
            armed.seen_bytes += len;
            continue;
        }
        if (!rule.range.overlaps(offset, len))
            continue;
        if (rule.err != 0 && verdict.err == 0)
            verdict.err = rule.err;
        verdict.delay = std::max(verdict.delay, rule.delay);
    }
    return verdict;
}

namespace {

struct ErrnoName {
    std::string_view name;
    int value;
};
constexpr std::array errno_names{
    ErrnoName{"eio", EIO},
    ErrnoName{"enospc", ENOSPC},
    ErrnoName{"enodev", ENODEV},
    ErrnoName{"enxio", ENXIO},
    ErrnoName{"eagain", EAGAIN},
    ErrnoName{"erofs", EROFS},
    ErrnoName{"etimedout", ETIMEDOUT},
};

std::vector<std::string_view> split_words(std::string_view line) {
    std::vector<std::string_view> words;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
            ++i;
        const size_t start = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t')
            ++i;
        if (i > start)
            words.push_back(line.substr(start, i - start));
    }
    return words;
}

Result<OpKind> parse_op(std::string_view word) {
    if (word == "read")
        return OpKind::read;
    if (word == "write")
        return OpKind::write;
    if (word == "any")
        return OpKind::any;
    return Error{-EINVAL, "expected read, write or any, got '" + std::string(word) + "'"};
}

Result<ByteRange> parse_range(std::string_view text) {
    const auto sep = text.find_first_of("-+");
    if (sep == std::string_view::npos)
        return Error{-EINVAL, "range '" + std::string(text) + "' is not START-END or START+LEN"};
    const auto begin = prewarmd::parse_size(text.substr(0, sep));
    if (!begin)
        return begin.error();
    const auto second = prewarmd::parse_size(text.substr(sep + 1));
    if (!second)
        return second.error();
    const uint64_t end = text[sep] == '+' ? *begin + *second : *second;
    if (end <= *begin)
        return Error{-EINVAL, "range '" + std::string(text) + "' is empty"};
    return ByteRange{*begin, end};
}

// The key=value options shared by fail and delay.
Result<void> parse_rule_options(const std::vector<std::string_view>& words, size_t first,
                                FaultRule& rule, bool allow_errno) {
    for (size_t i = first; i < words.size(); ++i) {
        const auto word = words[i];
        const auto eq = word.find('=');
        const auto key = word.substr(0, eq);
        const auto value = eq == std::string_view::npos ? std::string_view{} : word.substr(eq + 1);
        if (key == "range" && !value.empty()) {
            auto range = parse_range(value);
            if (!range)
                return range.error();
            rule.range = *range;
        } else if (key == "after" && !value.empty()) {
            auto bytes = prewarmd::parse_size(value);
            if (!bytes)
                return bytes.error();
            rule.after_bytes = *bytes;
        } else if (key == "errno" && allow_errno && !value.empty()) {
            bool known = false;
            for (const auto& e : errno_names)
                if (e.name == value) {
                    rule.err = e.value;
                    known = true;
                }
            if (!known)
                return Error{-EINVAL, "unknown errno '" + std::string(value) +
                                          "' (eio, enospc, enodev, enxio, eagain, erofs, "
                                          "etimedout)"};
        } else {
            return Error{-EINVAL, "unexpected '" + std::string(word) + "'"};
        }
    }
    return {};
}

Result<ControlCommand> parse_line(const std::vector<std::string_view>& words) {
    const auto verb = words[0];
    const auto need = [&](size_t min, size_t max, std::string_view usage) -> Result<void> {
        if (words.size() < min || words.size() > max)
            return Error{-EINVAL, "usage: " + std::string(usage)};
        return {};
    };
    if (verb == "fail") {
        if (auto ok = need(3, 6, "fail read|write|any DISK [range=..] [after=SIZE] [errno=NAME]");
            !ok)
            return ok.error();
        auto op = parse_op(words[1]);
        if (!op)
            return op.error();
        FaultCommand cmd{std::string(words[2]), FaultRule{}};
        cmd.rule.op = *op;
        cmd.rule.err = EIO;
        if (auto ok = parse_rule_options(words, 3, cmd.rule, true); !ok)
            return ok.error();
        return cmd;
    }
    if (verb == "delay") {
        if (auto ok = need(4, 6, "delay read|write|any DISK DURATION [range=..] [after=SIZE]"); !ok)
            return ok.error();
        auto op = parse_op(words[1]);
        if (!op)
            return op.error();
        auto delay = prewarmd::parse_duration(words[3]);
        if (!delay)
            return delay.error();
        FaultCommand cmd{std::string(words[2]), FaultRule{}};
        cmd.rule.op = *op;
        cmd.rule.delay = *delay;
        if (auto ok = parse_rule_options(words, 4, cmd.rule, false); !ok)
            return ok.error();
        return cmd;
    }
    if (verb == "clear") {
        if (auto ok = need(1, 2, "clear [DISK]"); !ok)
            return ok.error();
        return ClearCommand{words.size() == 2 ? std::string(words[1]) : "*"};
    }
    if (verb == "vanish" || verb == "appear") {
        if (auto ok = need(2, 2, std::string(verb) + " DISK"); !ok)
            return ok.error();
        return PresenceCommand{std::string(words[1]), verb == "appear"};
    }
    if (verb == "capacity") {
        if (auto ok = need(2, 2, "capacity SIZE|unlimited"); !ok)
            return ok.error();
        if (words[1] == "unlimited")
            return CapacityCommand{0};
        auto bytes = prewarmd::parse_size(words[1]);
        if (!bytes)
            return bytes.error();
        if (*bytes == 0)
            return Error{-EINVAL, "capacity must be positive (or 'unlimited')"};
        return CapacityCommand{*bytes};
    }
    return Error{-EINVAL, "unknown command '" + std::string(verb) +
                              "' (fail, delay, clear, vanish, appear, capacity)"};
}

} // namespace

Result<std::vector<ControlCommand>> parse_control(std::string_view text) {
    std::vector<ControlCommand> commands;
    size_t line_no = 0;
    while (!text.empty()) {
        ++line_no;
        const auto nl = text.find('\n');
        auto line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        if (const auto hash = line.find('#'); hash != std::string_view::npos)
            line = line.substr(0, hash);
        const auto words = split_words(line);
        if (words.empty())
            continue;
        auto command = parse_line(words);
        if (!command)
            return Error{command.error().err,
                         "line " + std::to_string(line_no) + ": " + command.error().message};
        commands.push_back(std::move(*command));
    }
    return commands;
}

} // namespace cowsim
