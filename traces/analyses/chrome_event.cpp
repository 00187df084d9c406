// One Chrome trace event printed as JSON text (see chrome_event.hpp).
#include "traces/analyses/chrome_event.hpp"

#include "model/check.hpp"
#include "traces/format/json_text.hpp"

namespace capsim {

void append_chrome_event(std::string& out, const ChromeEvent& e) {
  CAPSIM_CHECK(!e.args.empty() && e.args.front() == '{' && e.args.back() == '}',
               "args is a JSON object's text");
  const bool flow = e.ph == ChromePhase::kFlowStart || e.ph == ChromePhase::kFlowEnd;
  CAPSIM_CHECK(!flow || !e.cat.empty(), "a flow has a category");
  JsonObjectText o(out);
  o.add("name", e.name);
  if (flow) o.add("cat", e.cat);
  const char ph = static_cast<char>(e.ph);
  o.add("ph", std::string_view(&ph, 1));
  if (e.ph == ChromePhase::kInstant) o.add("s", "t");
  if (e.ph == ChromePhase::kFlowEnd) o.add("bp", "e");  // bind to the enclosing slice
  if (flow) o.add("id", e.id);
  o.add("ts", e.ts);
  if (e.ph == ChromePhase::kComplete) o.add("dur", e.dur);
  o.add("pid", e.pid);
  o.add("tid", e.tid);
  o.add_raw("args", e.args);
  o.close();
}

}  // namespace capsim
