/* OCR demo page: send one image or PDF to POST /api/ocr, draw the boxes and their text over it
 * (a document's pages one below the other), show the whole text ready to copy, and download the
 * answer as text, hOCR or a searchable PDF (the same upload sent again with ?format=).
 * A document over the synchronous page limit (413 too_many_pages), or a page too slow at the
 * working size asked (413 page_too_slow), is sent again as a job
 * (POST /api/jobs): a progress bar follows it (GET /api/jobs/<id>, as often as Retry-After
 * says), a button cancels it, and its result is fetched part by part (the "next" links) and
 * shown like a document; downloads then come from the job's result.
 *
 * Plain JavaScript, no build step, no third-party code. The API key lives in sessionStorage
 * only (gone when the tab closes); staff can use their admin session instead, which DRF
 * checks for CSRF, so those requests carry the X-CSRFToken header.
 *
 * Boxes come in the pixels of the upright (EXIF-transposed) image. Browsers display <img>
 * upright too (CSS image-orientation: from-image), so an SVG overlay whose viewBox is the
 * API's width x height, stretched over the displayed image, puts every point in its place
 * whatever the displayed size.
 */
(function () {
  "use strict";

  var KEY_STORAGE = "ocrDemo.apiKey";
  var SVG_NS = "http://www.w3.org/2000/svg";

  // Plain words for the API's stable error codes; the API's own message is shown below them.
  var FRIENDLY = {
    invalid_parameter: "One of the options is not valid.",
    missing_image: "No image was sent.",
    malformed_request: "The upload arrived garbled. Please try again.",
    image_undecodable: "The image file is damaged or incomplete, so it cannot be read.",
    document_undecodable: "The PDF is damaged, so it cannot be read.",
    document_encrypted: "The PDF is protected by a password; save it without one first.",
    document_empty: "The PDF has no pages.",
    document_too_complex: "A page of the PDF takes too long to draw.",
    too_many_pages: "The document has more pages than the demo reads at once.",
    page_too_slow: "At this working size the page takes this server too long to read at once.",
    image_too_small: "The image is too small to hold readable text.",
    not_authenticated: "An API key is needed: paste one above, or sign in to the admin as staff.",
    authentication_failed: "The API key was not accepted: it is unknown, revoked or expired.",
    permission_denied: "You are not allowed to do this. Use a valid API key or a staff account.",
    not_found: "The OCR service was not found at this address.",
    method_not_allowed: "The OCR service refused this kind of request.",
    payload_too_large: "The file is too big to upload.",
    image_too_large: "The picture has too many pixels. Try a smaller one.",
    unsupported_media_type: "That file is not an image the service can read " +
      "(" + document.getElementById("ocr-form").dataset.formats + ").",
    rate_limited: "Too many images were sent with this key in the last minute.",
    quota_exceeded: "This key's daily quota is used up.",
    internal_error: "Something went wrong on the server.",
    inference_failed: "The OCR service failed on this image.",
    inference_unavailable: "The OCR service is not available right now.",
    inference_timeout: "The OCR service took too long to answer."
  };

  var form = document.getElementById("ocr-form");
  var apiUrl = form.dataset.apiUrl;
  var jobsUrl = form.dataset.jobsUrl;
  var csrfToken = document.querySelector('meta[name="csrf-token"]').content;
  var fileInput = document.getElementById("image-input");
  var dropZone = document.getElementById("drop-zone");
  var keyInput = document.getElementById("api-key");
  var keyRow = document.getElementById("key-row");
  var runButton = document.getElementById("run");
  var statusLine = document.getElementById("status");
  var errorBox = document.getElementById("error");
  var resultBox = document.getElementById("result");
  var placeholder = document.getElementById("placeholder");
  var image = document.getElementById("result-image");
  var overlay = document.getElementById("overlay");
  var stage = document.getElementById("stage");
  var imageNote = document.getElementById("image-note");
  var textPanel = document.getElementById("text-panel");
  var fullText = document.getElementById("full-text");
  var copyStatus = document.getElementById("copy-status");
  var pagesBox = document.getElementById("pages");
  var downloadStatus = document.getElementById("download-status");
  var jobRow = document.getElementById("job-row");
  var jobProgress = document.getElementById("job-progress");
  var cancelJobButton = document.getElementById("cancel-job");
  var showWords = document.getElementById("show-words");

  var currentFile = null;
  // The job whose progress or result is shown (its downloads come from its result), or null.
  var currentJob = null;
  // The answer shown and its round trip (ms), drawn again when the word boxes are toggled.
  var shown = null;
  var imageUrl = null;
  var busy = false;

  // --- authentication ---------------------------------------------------------------------

  function authMode() {
    var checked = form.querySelector('input[name="auth"]:checked');
    return checked ? checked.value : "key";
  }

  function showKeyRow() {
    keyRow.hidden = authMode() !== "key";
  }

  keyInput.value = sessionStorage.getItem(KEY_STORAGE) || "";
  if (form.dataset.staff && !keyInput.value) {
    form.querySelector('input[name="auth"][value="session"]').checked = true;
  }
  showKeyRow();

  keyInput.addEventListener("input", function () {
    var key = keyInput.value.trim();
    if (key) {
      sessionStorage.setItem(KEY_STORAGE, key);
    } else {
      sessionStorage.removeItem(KEY_STORAGE);
    }
  });
  document.getElementById("forget-key").addEventListener("click", function () {
    keyInput.value = "";
    sessionStorage.removeItem(KEY_STORAGE);
    keyInput.focus();
  });
  form.querySelectorAll('input[name="auth"]').forEach(function (radio) {
    radio.addEventListener("change", showKeyRow);
  });

  // --- picking an image: file input, drag and drop, paste --------------------------------

  function useFile(file) {
    if (!file) {
      return;
    }
    currentFile = file;
    document.getElementById("file-name").textContent = file.name || "pasted image";
    run();
  }

  fileInput.addEventListener("change", function () {
    var file = fileInput.files[0];
    fileInput.value = "";  // so that picking the same file again is a change too
    useFile(file);
  });

  ["dragenter", "dragover"].forEach(function (type) {
    dropZone.addEventListener(type, function (event) {
      event.preventDefault();
      dropZone.classList.add("dragging");
    });
  });
  ["dragleave", "dragend"].forEach(function (type) {
    dropZone.addEventListener(type, function () {
      dropZone.classList.remove("dragging");
    });
  });
  dropZone.addEventListener("drop", function (event) {
    event.preventDefault();
    dropZone.classList.remove("dragging");
    var files = event.dataTransfer && event.dataTransfer.files;
    if (files && files.length) {
      useFile(files[0]);
    }
  });
  // A file dropped next to the zone must not make the browser navigate away to it.
  ["dragover", "drop"].forEach(function (type) {
    window.addEventListener(type, function (event) {
      event.preventDefault();
    });
  });
  document.addEventListener("paste", function (event) {
    var items = (event.clipboardData && event.clipboardData.files) || [];
    if (items.length && /^(image\/|application\/pdf)/.test(items[0].type)) {
      useFile(items[0]);
    }
  });

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    run();
  });

  // --- calling the API --------------------------------------------------------------------

  function setBusy(value, text) {
    busy = value;
    runButton.disabled = value;
    form.setAttribute("aria-busy", value ? "true" : "false");
    statusLine.textContent = text || "";
  }

  // The credentials of a request: {method, headers, credentials}, or null (with the problem
  // shown) when no key is there to send.
  function authorized(method, accept) {
    var headers = {"Accept": accept};
    var credentials = "omit";
    if (authMode() === "session") {
      headers["X-CSRFToken"] = csrfToken;
      credentials = "same-origin";
    } else {
      var key = keyInput.value.trim();
      if (!key) {
        showProblem(FRIENDLY.not_authenticated, "", "");
        keyInput.focus();
        return null;
      }
      headers.Authorization = "Api-Key " + key;
    }
    return {method: method, headers: headers, credentials: credentials};
  }

  // The upload of the current file and options: {method, headers, body, credentials}, or null.
  function request(accept) {
    var options = authorized("POST", accept);
    if (!options) {
      return null;
    }
    var body = new FormData();
    body.append("image", currentFile, currentFile.name || "image");
    ["long-side", "text-threshold"].forEach(function (id) {
      var input = document.getElementById(id);
      if (input.value.trim() !== "") {
        body.append(input.name, input.value.trim());
      }
    });
    var language = document.getElementById("language").value;
    if (language !== "auto") {
      body.append("language", language);
    }
    if (!document.getElementById("recognize").checked) {
      body.append("recognize", "false");
    }
    options.body = body;
    return options;
  }

  // The response with its body parsed as JSON (data: null when it is not JSON).
  function parsed(response) {
    return response.text().then(function (text) {
      var data = null;
      try {
        data = JSON.parse(text);
      } catch (ignored) {
        data = null;
      }
      return {response: response, data: data};
    });
  }

  function run() {
    if (busy) {
      return;
    }
    if (!currentFile) {
      showProblem("Choose an image or a PDF first.", "", "");
      return;
    }
    var options = request("application/json");
    if (!options) {
      return;
    }
    currentJob = null;
    jobRow.hidden = true;
    setBusy(true, "Reading text…");
    var started = performance.now();
    fetch(apiUrl, options)
      .then(parsed)
      .then(function (answer) {
        var roundTripMs = performance.now() - started;
        if (answer.response.status === 413 && answer.data && answer.data.error &&
            (answer.data.error.code === "too_many_pages" ||
             answer.data.error.code === "page_too_slow")) {
          return runJob(answer.data.error.message);
        }
        setBusy(false, "");
        if (answer.response.ok && answer.data &&
            (Array.isArray(answer.data.boxes) || Array.isArray(answer.data.pages))) {
          return showResult(answer.data, roundTripMs);
        }
        showApiError(answer.response, answer.data);
      })
      .catch(unreachable);
  }

  function unreachable(error) {
    setBusy(false, "");
    jobRow.hidden = true;
    showProblem("The server could not be reached. Check the connection and try again.",
                String(error && error.message || error), "");
  }

  // --- a long document as a job -------------------------------------------------------------

  var JOB_ACTIVE = {queued: true, running: true};
  var JOB_ENDED = {
    failed: "The job failed.",
    cancelled: "The job was cancelled."
  };

  // Send the current file to POST /api/jobs and follow it to its result.
  function runJob(reason) {
    var options = request("application/json");
    if (!options) {
      setBusy(false, "");
      return;
    }
    statusLine.textContent = "Too many pages to read at once: sending the document as a job…";
    statusLine.title = reason || "";
    var started = performance.now();
    return fetch(jobsUrl, options)
      .then(parsed)
      .then(function (answer) {
        if (answer.response.status !== 202 || !answer.data) {
          setBusy(false, "");
          return showApiError(answer.response, answer.data);
        }
        showJob(answer.data);
        return follow(answer.data, retryAfterMs(answer.response), started);
      })
      .catch(unreachable);
  }

  // Seconds in Retry-After as milliseconds, kept between 0.5 and 5 s so the bar moves.
  function retryAfterMs(response) {
    var seconds = parseFloat(response.headers.get("Retry-After") || "1");
    return Math.min(Math.max(isNaN(seconds) ? 1 : seconds, 0.5), 5) * 1000;
  }

  function showJob(job) {
    currentJob = job;
    jobRow.hidden = false;
    jobRow.dataset.jobId = job.id;
    jobRow.dataset.status = job.status;
    jobProgress.max = Math.max(job.progress.total, 1);
    jobProgress.value = job.progress.done;
    cancelJobButton.disabled = !JOB_ACTIVE[job.status];
    statusLine.textContent = "Job " + job.status + ": " + job.progress.done + " of " +
      job.progress.total + (job.progress.total === 1 ? " page" : " pages") + " read.";
  }

  function follow(job, delayMs, started) {
    if (!JOB_ACTIVE[job.status]) {
      return ended(job, started);
    }
    var options = authorized("GET", "application/json");
    if (!options) {
      setBusy(false, "");
      return;
    }
    return new Promise(function (resolve) { setTimeout(resolve, delayMs); })
      .then(function () { return fetch(job.links.self, options); })
      .then(parsed)
      .then(function (answer) {
        if (!answer.response.ok || !answer.data) {
          setBusy(false, "");
          jobRow.hidden = true;
          return showApiError(answer.response, answer.data);
        }
        showJob(answer.data);
        return follow(answer.data, retryAfterMs(answer.response), started);
      });
  }

  function ended(job, started) {
    if (job.status !== "succeeded") {
      setBusy(false, "");
      var error = job.error || {};
      showProblem(JOB_ENDED[job.status] || "The job ended as " + job.status + ".",
                  error.message || "", "job " + job.id + (error.code ? " · code " +
                  error.code : ""));
      errorBox.dataset.code = error.code || job.status;
      return;
    }
    statusLine.textContent = "Job succeeded: fetching its " + job.progress.total + " pages…";
    return fetchResult(job, job.links.result, [], started);
  }

  // Fetch the result part by part (each part names the next), then show it as a document.
  function fetchResult(job, url, pages, started) {
    var options = authorized("GET", "application/json");
    if (!options) {
      setBusy(false, "");
      return;
    }
    return fetch(url, options)
      .then(parsed)
      .then(function (answer) {
        if (!answer.response.ok || !answer.data) {
          setBusy(false, "");
          return showApiError(answer.response, answer.data);
        }
        pages = pages.concat(answer.data.pages);
        if (answer.data.next) {
          return fetchResult(job, answer.data.next, pages, started);
        }
        setBusy(false, "");
        var whole = {request_id: answer.data.request_id, job_id: job.id, model:
                     answer.data.model, document: answer.data.document, pages: pages};
        if (pages.every(function (page) { return typeof page.text === "string"; })) {
          whole.text = pages.map(function (page) { return page.text; }).join("\f");
        }
        showDocument(whole, performance.now() - started);
      });
  }

  cancelJobButton.addEventListener("click", function () {
    var options = currentJob ? authorized("DELETE", "application/json") : null;
    if (!options) {
      return;
    }
    cancelJobButton.disabled = true;
    fetch(currentJob.links.self, options).then(parsed).then(function (answer) {
      if (answer.response.ok && answer.data) {
        showJob(answer.data);
      }
    });
  });

  // --- showing the answer -----------------------------------------------------------------

  function showProblem(title, message, meta) {
    errorBox.dataset.code = "";
    errorBox.dataset.requestId = "";
    document.getElementById("error-title").textContent = title;
    document.getElementById("error-message").textContent = message;
    document.getElementById("error-meta").textContent = meta;
    errorBox.hidden = false;
    resultBox.hidden = true;
    placeholder.hidden = true;
  }

  function showApiError(response, data) {
    var error = data && data.error ? data.error : null;
    var code = error ? error.code : "";
    var title = FRIENDLY[code] || "The request failed (HTTP " + response.status + ").";
    var retryAfter = response.headers.get("Retry-After");
    if (retryAfter && (response.status === 429 || response.status === 503)) {
      title += " Try again in " + retryAfter + " s.";
    }
    var meta = ["HTTP " + response.status];
    if (code) {
      meta.push("code " + code);
    }
    if (data && data.request_id) {
      meta.push("request " + data.request_id);
    }
    showProblem(title, error ? error.message : "", meta.join(" · "));
    errorBox.dataset.code = code;
    errorBox.dataset.requestId = data && data.request_id ? data.request_id : "";
  }

  function formatMs(value) {
    return value.toLocaleString("en-US", {minimumFractionDigits: 1, maximumFractionDigits: 1}) +
      " ms";
  }

  // What to draw of an image or page answer: its boxes (the detector's), or with "word
  // boxes" ticked every word of its lines (each on its own box), marked kind "word".
  function shapes(answer) {
    if (!showWords.checked || !Array.isArray(answer.lines)) {
      return answer.boxes;
    }
    var words = [];
    answer.lines.forEach(function (line) {
      (line.words || []).forEach(function (word) {
        words.push({points: word.points, text: word.text, score: word.confidence,
                    kind: "word"});
      });
    });
    return words;
  }

  showWords.addEventListener("change", function () {
    if (!shown) {
      return;
    }
    if (shown.data.pages) {
      showDocument(shown.data, shown.roundTripMs);
    } else {
      drawBoxes(shapes(shown.data), shown.data.image.width, shown.data.image.height);
    }
  });

  function showResult(data, roundTripMs) {
    shown = {data: data, roundTripMs: roundTripMs};
    if (data.pages) {
      return showDocument(data, roundTripMs);
    }
    pagesBox.hidden = true;
    stage.parentNode.hidden = false;
    var width = data.image.width;
    var height = data.image.height;
    var count = data.boxes.length;

    errorBox.hidden = true;
    placeholder.hidden = true;
    resultBox.hidden = false;
    document.getElementById("summary").textContent =
      count + (count === 1 ? " box" : " boxes") + " · " + width + " × " + height + " " +
      data.image.format + (data.image.angle ? " turned " + data.image.angle + "°" : "") +
      " · " + formatMs(data.timing_ms.total) + " in the gateway (" +
      formatMs(data.timing_ms.inference) + " inference), " + formatMs(roundTripMs) +
      " round trip";
    document.getElementById("summary").dataset.count = String(count);
    document.getElementById("json").textContent = JSON.stringify(data, null, 2);
    // With recognize=false the answer has no text: the panel goes away.
    textPanel.hidden = typeof data.text !== "string";
    fullText.value = data.text || "";
    copyStatus.textContent = "";

    drawBoxes(shapes(data), width, height);
    loadImage(width, height, data.request_id);
  }

  // A document: every page as a white frame of its size, its boxes and their text drawn on it
  // (browsers show no PDF page as an image; the searchable PDF download has the pages).
  function showDocument(data, roundTripMs) {
    shown = {data: data, roundTripMs: roundTripMs};
    var count = data.pages.reduce(function (sum, page) { return sum + page.boxes.length; }, 0);
    errorBox.hidden = true;
    placeholder.hidden = true;
    resultBox.hidden = false;
    stage.parentNode.hidden = true;
    imageNote.hidden = true;
    document.getElementById("summary").textContent =
      data.document.format + " · " + data.pages.length +
      (data.pages.length === 1 ? " page · " : " pages · ") + count +
      (count === 1 ? " box · " : " boxes · ") + (data.job_id ? "read as job " +
      data.job_id + " in " + formatMs(roundTripMs) : formatMs(data.timing_ms.total) +
      " in the gateway, " + formatMs(roundTripMs) + " round trip");
    document.getElementById("summary").dataset.count = String(count);
    document.getElementById("json").textContent = JSON.stringify(data, null, 2);
    textPanel.hidden = typeof data.text !== "string";
    fullText.value = data.text || "";
    copyStatus.textContent = "";
    while (pagesBox.firstChild) {
      pagesBox.removeChild(pagesBox.firstChild);
    }
    data.pages.forEach(function (page) {
      var figure = document.createElement("figure");
      figure.className = "page";
      figure.dataset.page = String(page.page);
      var frame = document.createElement("div");
      frame.className = "stage blank";
      frame.style.aspectRatio = page.width + " / " + page.height;
      var svg = document.createElementNS(SVG_NS, "svg");
      svg.setAttribute("class", "overlay");
      svg.setAttribute("preserveAspectRatio", "none");
      frame.appendChild(svg);
      drawBoxes(shapes(page), page.width, page.height, svg);
      var caption = document.createElement("figcaption");
      caption.className = "hint";
      caption.textContent = "Page " + page.page + " · " + page.width + " × " + page.height +
        " · " + page.boxes.length + (page.boxes.length === 1 ? " box" : " boxes");
      figure.appendChild(caption);
      figure.appendChild(frame);
      pagesBox.appendChild(figure);
    });
    pagesBox.hidden = false;
    resultBox.dataset.requestId = data.request_id;
  }

  function drawBoxes(boxes, width, height, target) {
    var svg = target || overlay;
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.dataset.width = String(width);
    svg.dataset.height = String(height);
    while (svg.firstChild) {
      svg.removeChild(svg.firstChild);
    }
    boxes.forEach(function (box, index) {
      var polygon = document.createElementNS(SVG_NS, "polygon");
      polygon.setAttribute("points", box.points.map(function (p) {
        return p[0] + "," + p[1];
      }).join(" "));
      polygon.setAttribute("class", box.kind || "box");
      // Strokes keep their width on screen however far the viewBox is scaled.
      polygon.setAttribute("vector-effect", "non-scaling-stroke");
      polygon.dataset.index = String(index);
      polygon.dataset.score = String(box.score);
      var title = document.createElementNS(SVG_NS, "title");
      title.textContent = box.kind === "word" ?
        "Word " + (index + 1) + " · “" + box.text + "” (confidence " + box.score + ")" :
        "Box " + (index + 1) + " · score " + box.score +
        (typeof box.text === "string" ? " · “" + box.text + "” (" + box.text_score + ")" : "");
      polygon.appendChild(title);
      svg.appendChild(polygon);
      if (box.text) {
        svg.appendChild(label(box));
      }
    });
  }

  // --- downloads: the same upload again, in another format ---------------------------------

  var EXTENSIONS = {text: "txt", hocr: "hocr.html", pdf: "pdf"};
  var MEDIA_TYPES = {text: "text/plain", hocr: "application/xhtml+xml", pdf: "application/pdf"};

  document.querySelectorAll(".downloads button").forEach(function (button) {
    button.addEventListener("click", function () {
      var format = button.dataset.format;
      // A job's result is there already; an upload read at once is sent again.
      var options = currentJob ? authorized("GET", MEDIA_TYPES[format]) :
        currentFile ? request(MEDIA_TYPES[format]) : null;
      if (!options) {
        return;
      }
      var url = currentJob ? currentJob.links.result : apiUrl;
      downloadStatus.textContent = "Preparing " + button.textContent + "…";
      fetch(url + "?format=" + format, options)
        .then(function (response) {
          if (!response.ok) {
            return response.json().then(function (data) {
              throw new Error(data && data.error ? data.error.message : "HTTP " + response.status);
            });
          }
          return response.blob();
        })
        .then(function (blob) {
          var link = document.createElement("a");
          var base = (currentFile.name || "upload").replace(/\.[^.]*$/, "");
          link.href = URL.createObjectURL(blob);
          link.download = base + "." + EXTENSIONS[format];
          document.body.appendChild(link);
          link.click();
          link.remove();
          setTimeout(function () { URL.revokeObjectURL(link.href); }, 60000);
          downloadStatus.textContent = link.download + " downloaded.";
        })
        .catch(function (error) {
          downloadStatus.textContent = "Could not download: " + (error && error.message || error);
        });
    });
  });

  // The box's text just above its top edge, sized to the box (image pixels, like the points).
  // The points start at the top-left of the box's own text, so on a turned page the label is
  // turned with its line (along points[0] -> points[1]).
  function label(box) {
    var p = box.points;
    var height = Math.hypot(p[3][0] - p[0][0], p[3][1] - p[0][1]);
    var degrees = Math.atan2(p[1][1] - p[0][1], p[1][0] - p[0][0]) * 180 / Math.PI;
    var text = document.createElementNS(SVG_NS, "text");
    text.setAttribute("class", "label");
    text.setAttribute("x", String(p[0][0]));
    if (Math.abs(degrees) > 20) {
      text.setAttribute("y", String(p[0][1] - height * 0.12));
      text.setAttribute("transform", "rotate(" + degrees.toFixed(1) + " " + p[0][0] + " " +
                        p[0][1] + ")");
    } else {
      text.setAttribute("y", String(Math.max(p[0][1] - height * 0.12, height * 0.5)));
    }
    text.setAttribute("font-size", String(Math.max(height * 0.45, 6)));
    text.textContent = box.text;
    return text;
  }

  document.getElementById("copy-text").addEventListener("click", function () {
    var done = function () { copyStatus.textContent = "Copied."; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(fullText.value).then(done, function () {
        copyStatus.textContent = "Select the text and copy it by hand.";
      });
    } else {  // plain-HTTP pages on another host have no clipboard API
      fullText.select();
      document.execCommand("copy");
      done();
    }
  });

  // Shows the picked file under the boxes; marks the result done (data-request-id) once the
  // picture is laid out, which is what scripts and tests wait for.
  function loadImage(width, height, requestId) {
    if (imageUrl) {
      URL.revokeObjectURL(imageUrl);
    }
    imageUrl = URL.createObjectURL(currentFile);
    imageNote.hidden = true;
    stage.classList.remove("blank");
    stage.style.aspectRatio = "";
    image.hidden = false;
    image.onload = function () {
      // Same aspect as the API's upright frame, or the browser shows another orientation.
      var apiAspect = width / height;
      var shownAspect = image.naturalWidth / image.naturalHeight;
      if (Math.abs(apiAspect - shownAspect) / apiAspect > 0.01) {
        note("This browser shows the picture at " + image.naturalWidth + " × " +
             image.naturalHeight + ", not in the API's upright " + width + " × " + height +
             " frame, so the boxes may not line up.");
      }
      resultBox.dataset.requestId = requestId;
    };
    image.onerror = function () {
      // e.g. HEIC, which the API reads but most browsers cannot display.
      image.hidden = true;
      stage.classList.add("blank");
      stage.style.aspectRatio = width + " / " + height;
      note("This browser cannot display this image format; the boxes are drawn on a blank " +
           width + " × " + height + " frame.");
      resultBox.dataset.requestId = requestId;
    };
    resultBox.dataset.requestId = "";
    image.src = imageUrl;
  }

  function note(text) {
    imageNote.textContent = text;
    imageNote.hidden = false;
  }
})();
