// SPDX-License-Identifier: GPL-3.0-or-later
// Post-processors of tokenizer.json (tokenizers/src/processors/*.rs), for single sequences:
// they add special tokens around the ids when add_special_tokens is set. ByteLevel only trims
// offsets, which QuantLab does not compute.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/text/tokenizer_components.h"

namespace ql::text {
namespace {

int32_t token_id(const Json& j, const JsonPath& at) {
    if (!j.is_number_integer() || j.get<int64_t>() < 0 || j.get<int64_t>() > INT32_MAX) at.fail("expected a token id");
    return static_cast<int32_t>(j.get<int64_t>());
}

// ["[SEP]", 102] as BertProcessing / RobertaProcessing store their tokens.
int32_t token_pair(const Json& j, const JsonPath& at, const std::string& key) {
    const Json& v = at.require(j, key);
    if (!v.is_array() || v.size() != 2 || !v[0].is_string()) (at / key).fail("expected [\"token\", id]");
    return token_id(v[1], (at / key)[1]);
}

class WrapProcessor final : public PostProcessor {
public:
    WrapProcessor(std::string name, std::vector<int32_t> before, std::vector<int32_t> after)
        : name_(std::move(name)), ends_{std::move(before), std::move(after)} {}
    void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
        if (!add_special_tokens) return;
        ids.insert(ids.begin(), ends_.before.begin(), ends_.before.end());
        ids.insert(ids.end(), ends_.after.begin(), ends_.after.end());
    }
    TemplateEnds ends() const override { return ends_; }
    std::string describe() const override { return name_; }

private:
    std::string name_;
    TemplateEnds ends_;
};

class NoOpProcessor final : public PostProcessor {
public:
    void process(std::vector<int32_t>&, bool) const override {}
    TemplateEnds ends() const override { return {}; }
    std::string describe() const override { return "ByteLevel"; }
};

class SequenceProcessor final : public PostProcessor {
public:
    explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
    void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
        for (const auto& p : parts_) p->process(ids, add_special_tokens);
    }
    TemplateEnds ends() const override {
        TemplateEnds all;
        for (const auto& p : parts_) {
            const TemplateEnds e = p->ends();
            all.before.insert(all.before.begin(), e.before.begin(), e.before.end());
            all.after.insert(all.after.end(), e.after.begin(), e.after.end());
        }
        return all;
    }
    std::string describe() const override {
        std::string d = "Sequence[";
        for (size_t i = 0; i < parts_.size(); ++i) d += (i ? ", " : "") + parts_[i]->describe();
        return d + "]";
    }

private:
    std::vector<std::unique_ptr<PostProcessor>> parts_;
};

// TemplateProcessing's "single" template: special tokens before and after sequence A.
std::unique_ptr<PostProcessor> make_template(const Json& j, const JsonPath& at) {
    std::map<std::string, std::vector<int32_t>> specials;
    if (j.contains("special_tokens")) {
        const Json& st = j["special_tokens"];
        const JsonPath sat = at / "special_tokens";
        if (!st.is_object()) sat.fail("expected an object");
        for (const auto& [name, value] : st.items()) {
            const Json& ids = sat.array(value, "ids");
            std::vector<int32_t> v;
            for (size_t i = 0; i < ids.size(); ++i) v.push_back(token_id(ids[i], (sat / name / "ids")[i]));
            specials[name] = std::move(v);
        }
    }
    const Json& single = at.array(j, "single");
    std::vector<int32_t> before, after;
    bool seen_sequence = false;
    for (size_t i = 0; i < single.size(); ++i) {
        const JsonPath iat = (at / "single")[i];
        const Json& item = single[i];
        if (item.is_object() && item.contains("Sequence")) {
            if (seen_sequence) iat.fail("a single-sequence template may hold the sequence only once");
            seen_sequence = true;
        } else if (item.is_object() && item.contains("SpecialToken")) {
            const std::string id = (iat / "SpecialToken").string(item["SpecialToken"], "id");
            const auto it = specials.find(id);
            if (it == specials.end()) (iat / "SpecialToken" / "id").fail("special token '" + id + "' is not in special_tokens");
            auto& dst = seen_sequence ? after : before;
            dst.insert(dst.end(), it->second.begin(), it->second.end());
        } else {
            iat.fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
        }
    }
    if (!seen_sequence) (at / "single").fail("the template has no sequence ($A)");
    return std::make_unique<WrapProcessor>("TemplateProcessing", std::move(before), std::move(after));
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const Json& j, const JsonPath& at) {
    if (j.is_null()) return nullptr;
    if (!j.is_object()) at.fail("expected an object or null");
    const std::string type = at.type(j);
    if (type == "TemplateProcessing") return make_template(j, at);
    if (type == "BertProcessing" || type == "RobertaProcessing")
        return std::make_unique<WrapProcessor>(type, std::vector<int32_t>{token_pair(j, at, "cls")},
                                               std::vector<int32_t>{token_pair(j, at, "sep")});
    if (type == "ByteLevel") return std::make_unique<NoOpProcessor>();
    if (type == "Sequence") {
        const Json& list = at.array(j, "processors");
        std::vector<std::unique_ptr<PostProcessor>> parts;
        for (size_t i = 0; i < list.size(); ++i) {
            auto p = make_post_processor(list[i], (at / "processors")[i]);
            if (p) parts.push_back(std::move(p));
        }
        return std::make_unique<SequenceProcessor>(std::move(parts));
    }
    (at / "type").fail("post_processor type '" + type + "' is not supported");
}

}  // namespace ql::text
