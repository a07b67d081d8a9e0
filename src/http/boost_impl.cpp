// The one translation unit that compiles Asio's and Beast's library bodies (style.md 1).
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
