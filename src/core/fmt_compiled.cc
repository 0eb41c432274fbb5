// fmt's compiled half, built into stallscope. Debian ships fmt (libfmt-dev)
// as a shared library only, and a shared library costs every start of the
// program its loading and relocation (CMakeLists.txt says how much); fmt
// also works from its headers alone, and this file is where its non-inline
// functions (fmt/format-inl.h) are compiled once, with the templates that
// fmt/format.h declares `extern template` instantiated for char. No other
// file includes format-inl.h; the rest of the code includes <fmt/format.h>
// as before.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

// Shortest round-trip decimal of a float and a double.
template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

// Locale support ({:L}).
template locale_ref::locale_ref(const std::locale& loc);
template auto locale_ref::get<std::locale>() const -> std::locale;
template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl(locale_ref) -> char;

// Formatting into a buffer of char.
template void buffer<char>::append(const char*, const char*);
template void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>,
                         locale_ref);

}  // namespace detail
FMT_END_NAMESPACE
