# SPDX-License-Identifier: GPL-3.0-or-later
# Build step (cmake -P): writes OUT, a C++ file holding every recipe preset JSON in FILES
# (a ;-list) as a raw string, so quantlab-cli and the GUI find presets without an install path.
set(body "// Generated from resources/presets by resources/embed_presets.cmake. Do not edit.\n")
string(APPEND body "#include \"engine/quant/recipe_presets.h\"\n\nnamespace ql {\n\n")
string(APPEND body "const std::vector<std::pair<std::string, std::string>>& recipe_preset_texts() {\n")
string(APPEND body "    static const std::vector<std::pair<std::string, std::string>> presets = {\n")
list(SORT FILES)
foreach(f IN LISTS FILES)
  get_filename_component(name "${f}" NAME_WE)
  file(READ "${f}" text)
  if(text MATCHES "\\)QLPRESET\"")
    message(FATAL_ERROR "${f} contains the raw-string delimiter")
  endif()
  string(APPEND body "        {\"${name}\", R\"QLPRESET(${text})QLPRESET\"},\n")
endforeach()
string(APPEND body "    };\n    return presets;\n}\n\n}  // namespace ql\n")
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
