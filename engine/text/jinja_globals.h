// SPDX-License-Identifier: GPL-3.0-or-later
// The global names a chat template sees under transformers (chat_template_utils.
// _compile_jinja_template): Jinja2's defaults as the sandbox sets them (range = safe_range, dict,
// namespace, cycler, joiner, lipsum) with transformers' TemplateDict and TemplateNamespace, plus
// raise_exception and strftime_now.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>

#include "engine/text/jinja_value.h"

namespace ql::jinja {

// `strftime` formats the render's current time (datetime.now().strftime(format)).
void add_jinja_globals(std::unordered_map<std::string, Value>& context,
                       std::function<std::string(const std::string&)> strftime);

}  // namespace ql::jinja
