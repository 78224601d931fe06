# Script mode (cmake -P): inlines the live page's stylesheet and script into
# its HTML, so GET / answers one self-contained document, and writes it as a
# byte array in a C++ source. The files stay plain HTML, CSS and JS in
# exporters/ui/, edited and linted as such.
#   -DUI_DIR=exporters/ui -DOUTPUT_DIR=<where live_page.html and live_page_html.cpp go>
# The page must stay small: over MAX_BYTES the build fails.
set(MAX_BYTES 204800)

file(READ "${UI_DIR}/index.html" html)
foreach(pair "<link rel=\"stylesheet\" href=\"style.css\">|style.css|style"
             "<script src=\"app.js\"></script>|app.js|script")
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 tag)
  list(GET pair 1 file)
  list(GET pair 2 element)
  string(FIND "${html}" "${tag}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${UI_DIR}/index.html lacks '${tag}', where ${file} is inlined")
  endif()
  file(READ "${UI_DIR}/${file}" content)
  string(REPLACE "${tag}" "<${element}>\n${content}</${element}>" html "${html}")
endforeach()

file(WRITE "${OUTPUT_DIR}/live_page.html" "${html}")
file(SIZE "${OUTPUT_DIR}/live_page.html" size)
if(size GREATER MAX_BYTES)
  message(FATAL_ERROR "the live page is ${size} bytes, over its budget of ${MAX_BYTES}")
endif()
file(READ "${OUTPUT_DIR}/live_page.html" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes
                     "${bytes}")
file(WRITE "${OUTPUT_DIR}/live_page_html.cpp.new"
  "// Generated from exporters/ui/ by cmake/EmbedLivePage.cmake; edit those files, not this one.\n"
  "#include \"live_page.hpp\"\n\n"
  "namespace glassbox::exporters::detail {\n\n"
  "namespace {\nconstexpr unsigned char kPage[] = {\n${bytes}};\n}  // namespace\n\n"
  "std::string_view live_page_html() { return {reinterpret_cast<const char*>(kPage), sizeof kPage}; }\n\n"
  "}  // namespace glassbox::exporters::detail\n")
# Rewritten only when it changed, so an untouched page recompiles nothing.
file(COPY_FILE "${OUTPUT_DIR}/live_page_html.cpp.new" "${OUTPUT_DIR}/live_page_html.cpp" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT_DIR}/live_page_html.cpp.new")
