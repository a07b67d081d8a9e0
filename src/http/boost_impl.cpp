// The one translation unit that compiles Asio's and Beast's library bodies: Beast and Asio are
// header-heavy, and compiling them once keeps every other translation unit fast
// (docs/architecture.md).
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
