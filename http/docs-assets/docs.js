// The /docs page: renders the host's own OpenAPI document (fetched from the URL the page names) as a list
// of operations by tag, each with its parameters, request body and responses, and a form to try it. Plain
// JavaScript, no dependencies, nothing fetched but the document and the calls a person makes. Text of the
// document is only ever set as text, never as markup.
(function () {
  'use strict';
  var root = document.getElementById('docs');
  var specUrl = root.getAttribute('data-openapi');
  var keyInput = document.getElementById('api-key');

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      if (name === 'text') node.textContent = attrs[name];
      else node.setAttribute(name, attrs[name]);
    });
    (children || []).forEach(function (child) {
      if (child) node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    });
    return node;
  }

  function resolve(spec, schema) {
    var seen = 0;
    while (schema && schema.$ref && seen++ < 20) {
      var parts = schema.$ref.replace(/^#\//, '').split('/');
      schema = parts.reduce(function (at, part) { return at && at[part]; }, spec);
    }
    return schema || {};
  }

  function typeOf(spec, schema) {
    schema = resolve(spec, schema);
    if (schema.enum) return schema.enum.map(function (v) { return JSON.stringify(v); }).join(' | ');
    if (schema.const !== undefined) return JSON.stringify(schema.const);
    var alternatives = schema.anyOf || schema.oneOf;
    if (alternatives) return alternatives.map(function (s) { return typeOf(spec, s); }).join(' or ');
    var type = Array.isArray(schema.type) ? schema.type.join(' | ') : schema.type || (schema.properties ? 'object' : 'any');
    if (type === 'array') return 'array of ' + typeOf(spec, schema.items || {});
    return type + (schema.format ? ' (' + schema.format + ')' : '');
  }

  // A schema as a nested list of its fields: name, type, required, description.
  function fields(spec, schema, depth) {
    schema = resolve(spec, schema);
    if (schema.type === 'array' && schema.items) schema = resolve(spec, schema.items);
    var properties = schema.properties || {};
    var names = Object.keys(properties);
    if (names.length === 0 || depth > 6) return null;
    var required = schema.required || [];
    return el('ul', { class: 'fields' }, names.map(function (name) {
      var property = resolve(spec, properties[name]);
      return el('li', {}, [
        el('code', { class: 'field', text: name }),
        ' ',
        el('span', { class: 'type', text: typeOf(spec, properties[name]) }),
        required.indexOf(name) >= 0 ? el('span', { class: 'required', text: ' required' }) : null,
        property.description ? el('span', { class: 'description', text: ' — ' + property.description }) : null,
        fields(spec, property, depth + 1),
      ]);
    }));
  }

  function schemaBlock(spec, content) {
    var media = content && (content['application/json'] || content['application/problem+json'] || content[Object.keys(content)[0]]);
    if (!media) return null;
    var list = media.schema ? fields(spec, media.schema, 0) : null;
    return el('div', { class: 'schema' }, [
      el('span', { class: 'media', text: Object.keys(content).join(', ') + (media.schema ? ': ' + typeOf(spec, media.schema) : '') }),
      list,
    ]);
  }

  function tryIt(spec, path, method, operation) {
    var parameters = (operation.parameters || []).map(function (p) { return resolve(spec, p); });
    var inputs = parameters.map(function (parameter) {
      var id = 'p-' + Math.random().toString(36).slice(2);
      return { parameter: parameter, input: el('input', { id: id, name: parameter.name }), id: id };
    });
    var hasBody = Boolean(operation.requestBody && operation.requestBody.content && operation.requestBody.content['application/json']);
    var body = hasBody ? el('textarea', { rows: '6', 'aria-label': 'Request body (JSON)' }) : null;
    var output = el('pre', { class: 'output', 'aria-live': 'polite' });
    var send = el('button', { type: 'submit', text: 'Send' });
    var form = el('form', { class: 'try' }, [
      el('h4', { text: 'Try it' }),
      inputs.length ? el('div', { class: 'inputs' }, inputs.map(function (item) {
        return el('p', {}, [el('label', { for: item.id, text: item.parameter.name + ' (' + item.parameter.in + ')' }), ' ', item.input]);
      })) : null,
      body ? el('p', {}, [el('label', { text: 'Body (JSON)' }), el('br'), body]) : null,
      send,
      output,
    ]);
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var url = path;
      var query = new URLSearchParams();
      var headers = {};
      inputs.forEach(function (item) {
        var value = item.input.value;
        if (value === '') return;
        if (item.parameter.in === 'path') url = url.replace('{' + item.parameter.name + '}', encodeURIComponent(value));
        else if (item.parameter.in === 'query') query.append(item.parameter.name, value);
        else if (item.parameter.in === 'header') headers[item.parameter.name] = value;
      });
      if (keyInput.value) headers['x-api-key'] = keyInput.value;
      if (body && body.value.trim() !== '') headers['content-type'] = 'application/json';
      var base = (spec.servers && spec.servers[0] && spec.servers[0].url) || '';
      var target = base.replace(/\/$/, '') + url + (query.toString() ? '?' + query : '');
      output.textContent = 'Sending…';
      fetch(target, { method: method.toUpperCase(), headers: headers, body: body && body.value.trim() !== '' ? body.value : undefined })
        .then(function (response) {
          return response.text().then(function (text) {
            var shown = text;
            try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* not JSON: shown as it came */ }
            output.textContent = response.status + ' ' + response.statusText + '\n\n' + shown;
          });
        })
        .catch(function (error) { output.textContent = 'The request failed: ' + error.message; });
    });
    return form;
  }

  function operationView(spec, path, method, operation) {
    var parameters = (operation.parameters || []).map(function (p) { return resolve(spec, p); });
    var responses = operation.responses || {};
    return el('details', { class: 'operation ' + method, id: (operation.operationId || method + path).replace(/[^A-Za-z0-9_-]/g, '_') }, [
      el('summary', {}, [
        el('span', { class: 'method', text: method.toUpperCase() }),
        ' ',
        el('code', { class: 'path', text: path }),
        ' ',
        el('span', { class: 'summary', text: operation.summary || '' }),
        operation.deprecated ? el('span', { class: 'deprecated', text: ' deprecated' }) : null,
      ]),
      operation.description ? el('p', { text: operation.description }) : null,
      parameters.length ? el('section', {}, [
        el('h4', { text: 'Parameters' }),
        el('ul', { class: 'fields' }, parameters.map(function (parameter) {
          return el('li', {}, [
            el('code', { class: 'field', text: parameter.name }),
            ' ',
            el('span', { class: 'type', text: parameter.in + ', ' + typeOf(spec, parameter.schema || {}) }),
            parameter.required ? el('span', { class: 'required', text: ' required' }) : null,
            parameter.description ? el('span', { class: 'description', text: ' — ' + parameter.description }) : null,
          ]);
        })),
      ]) : null,
      operation.requestBody ? el('section', {}, [el('h4', { text: 'Request body' }), schemaBlock(spec, resolve(spec, operation.requestBody).content)]) : null,
      el('section', { class: 'responses' }, [el('h4', { text: 'Responses' })].concat(Object.keys(responses).map(function (status) {
        var response = resolve(spec, responses[status]);
        return el('div', { class: 'response' }, [
          el('strong', { class: 'status', text: status }),
          ' ',
          el('span', { text: response.description || '' }),
          schemaBlock(spec, response.content),
        ]);
      }))),
      tryIt(spec, path, method, operation),
    ]);
  }

  fetch(specUrl)
    .then(function (response) { return response.json(); })
    .then(function (spec) {
      document.title = (spec.info && spec.info.title) || document.title;
      root.textContent = '';
      root.appendChild(el('p', { class: 'version', text: 'Version ' + ((spec.info && spec.info.version) || '') }));
      var byTag = {};
      var order = [];
      Object.keys(spec.paths || {}).forEach(function (path) {
        Object.keys(spec.paths[path]).forEach(function (method) {
          if (['get', 'put', 'post', 'delete', 'patch', 'head', 'options'].indexOf(method) < 0) return;
          var operation = spec.paths[path][method];
          var tag = (operation.tags && operation.tags[0]) || 'Other';
          if (!byTag[tag]) { byTag[tag] = []; order.push(tag); }
          byTag[tag].push(operationView(spec, path, method, operation));
        });
      });
      order.forEach(function (tag) {
        root.appendChild(el('section', { class: 'tag' }, [el('h2', { text: tag })].concat(byTag[tag])));
      });
    })
    .catch(function (error) { root.textContent = 'Could not read the API description: ' + error.message; });
})();
